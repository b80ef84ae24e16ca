package fsm

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// AppliedQuery asks a replica for its applied index. Answer: uint64.
type AppliedQuery struct{}

// OwnedQuery asks a replica for its owned hash slots. Answer: []slotstore.HashSlot.
type OwnedQuery struct{}

// reader answers queries from committed state: the Lookup side of the state
// machine, apart from the Update side (the applier). It runs concurrently
// with Update, so it reads only Pebble (committed batches) and the state
// machine's atomics, never the fields that only Update touches.
type reader struct{ *StateMachine }

// lookups maps each query kind to the function that answers it; resource
// families register theirs from init functions, like appliers.
var lookups = map[meta.QueryKind]func(reader, meta.Query) (any, error){}

// registerLookup installs the answer function of query kind k. f takes the
// query's own type and returns the answer type the query declares
// (meta.For), so a lookup answering another type does not compile; the
// answer becomes untyped only here, where dragonboat's Lookup needs it.
func registerLookup[A any, Q meta.For[A]](k meta.QueryKind, f func(reader, Q) (A, error)) {
	if _, dup := lookups[k]; dup {
		panic(fmt.Sprintf("fsm: lookup for query kind %d registered twice", k))
	}
	lookups[k] = func(s reader, q meta.Query) (any, error) {
		typed, ok := q.(Q)
		if !ok {
			return nil, fmt.Errorf("fsm: query kind %d is a %T, not a %T", k, q, typed)
		}
		return f(s, typed)
	}
}

// Lookup answers a query from committed state. It runs concurrently with
// Update and so reads only Pebble and atomics.
func (s *StateMachine) Lookup(q any) (any, error) {
	switch q := q.(type) {
	case AppliedQuery:
		return s.applied.Load(), nil
	case OwnedQuery:
		return s.owned.Load().Slots(), nil
	case meta.Query:
		if f, ok := lookups[q.Kind()]; ok {
			return f(reader{s}, q)
		}
	}
	return nil, fmt.Errorf("fsm: unknown query %T", q)
}

// getUser answers meta.GetUser: *meta.User or a nil one.
func (s reader) getUser(q *meta.GetUser) (*meta.User, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	raw, found, err := s.get(meta.UserKey(s.cfg.Group, q.HashSlot, q.UID))
	if err != nil || !found {
		return nil, err
	}
	return meta.DecodeUser(raw)
}

// getKV answers meta.GetKV: *meta.KV or a nil one.
func (s reader) getKV(q *meta.GetKV) (*meta.KV, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	raw, found, err := s.get(meta.KVKey(s.cfg.Group, q.HashSlot, q.Key))
	if err != nil || !found {
		return nil, err
	}
	return meta.DecodeKV(raw)
}

func (s reader) checkOwned(hs slotstore.HashSlot) error {
	if !s.owned.Load().Has(hs) {
		return &slotstore.Error{Code: slotstore.CodeWrongGroup,
			Message: fmt.Sprintf("group %d does not own hash slot %d", s.cfg.Group, hs)}
	}
	return nil
}

func (s reader) get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}

// maxScanLimit bounds one scan regardless of what the caller asks.
const maxScanLimit = 1000

func (s reader) scanUsers(q *meta.ScanUsers) (*meta.UserPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxScanLimit {
		limit = maxScanLimit
	}
	if q.FromSlot > q.ToSlot || !q.ToSlot.Valid() {
		return nil, slotstore.Errorf(slotstore.CodeInvalidArgument, "bad slot range [%d,%d]", q.FromSlot, q.ToSlot)
	}
	for hs := q.FromSlot; hs <= q.ToSlot; hs++ {
		if err := s.checkOwned(hs); err != nil {
			return nil, err
		}
	}
	page := &meta.UserPage{}
	for hs := q.FromSlot; hs <= q.ToSlot; hs++ {
		prefix := meta.TablePrefix(s.cfg.Group, hs, meta.TableUser)
		lower := prefix
		if hs == q.FromSlot && q.AfterUID != "" {
			// The smallest key after AfterUID: AfterUID followed by 0x00.
			lower = append(meta.UserKey(s.cfg.Group, hs, q.AfterUID), 0)
		}
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: meta.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid(); it.Next() {
			if len(page.Users) == limit {
				page.More = true
				break
			}
			u, err := meta.DecodeUser(it.Value())
			if err != nil {
				_ = it.Close()
				return nil, err
			}
			page.Users = append(page.Users, u)
			page.LastSlot, page.LastUID = hs, u.UID
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
		if page.More {
			break
		}
	}
	return page, nil
}
