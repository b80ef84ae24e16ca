package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
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
	return getRow(s, meta.UserKey(s.cfg.Group, q.HashSlot, q.UID), meta.DecodeUser)
}

// getKV answers meta.GetKV: *meta.KV or a nil one.
func (s reader) getKV(q *meta.GetKV) (*meta.KV, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	return getRow(s, meta.KVKey(s.cfg.Group, q.HashSlot, q.Key), meta.DecodeKV)
}

func (s reader) checkOwned(hs slotstore.HashSlot) error {
	if !s.owned.Load().Has(hs) {
		return &slotstore.Error{Code: slotstore.CodeWrongGroup,
			Message: fmt.Sprintf("group %d does not own hash slot %d", s.cfg.Group, hs)}
	}
	return nil
}

// checkRouted checks that a query's hash slot is its route key's and that
// this group owns it.
func (s reader) checkRouted(hs slotstore.HashSlot, routeKey string) error {
	if got := slotstore.HashSlotOfString(routeKey); got != hs {
		return slotstore.Errorf(slotstore.CodeInvalidArgument, "route key hashes to slot %d, query names %d", got, hs)
	}
	return s.checkOwned(hs)
}

// checkOwnedRange checks a query's run of hash slots [from, to]: a valid
// range, all of it owned here.
func (s reader) checkOwnedRange(from, to slotstore.HashSlot) error {
	if from > to || !to.Valid() {
		return slotstore.Errorf(slotstore.CodeInvalidArgument, "bad slot range [%d,%d]", from, to)
	}
	for hs := from; hs <= to; hs++ {
		if err := s.checkOwned(hs); err != nil {
			return err
		}
	}
	return nil
}

// stillOwned checks, once a lookup has read the store, that the group
// still owns what it read. An Update that releases a slot stops owning it
// before the rows go (statemachine.go), so a lookup that checked the slot
// before the release and read after it — and found nothing — learns here
// that the slot left: wrong_group, asked again where it went, never "no
// such row" for a row that exists elsewhere.
func (s reader) stillOwned(q meta.Query) error {
	switch q := q.(type) {
	case *meta.ScanOutbox, *meta.GetRows:
		return nil // they check each slot against a view taken after their read
	case *meta.ScanUsers:
		return s.checkOwnedRange(q.FromSlot, q.ToSlot)
	case *meta.ScanPluginUsers:
		return s.checkOwnedRange(q.FromSlot, q.ToSlot)
	case *meta.ScanKV:
		return s.checkOwnedRange(q.FromSlot, q.ToSlot)
	}
	return s.checkOwned(q.RouteSlot())
}

func (s reader) get(key []byte) ([]byte, bool, error) {
	if s.beforeGet != nil {
		s.beforeGet()
	}
	return store.Get(s.db, key)
}

// maxScanLimit bounds one scan regardless of what the caller asks.
const maxScanLimit = 1000

// scanUsers answers meta.ScanUsers: the users of a run of hash slots, in
// (slot, uid) order.
func (s reader) scanUsers(q *meta.ScanUsers) (*meta.UserPage, error) {
	if err := s.checkOwnedRange(q.FromSlot, q.ToSlot); err != nil {
		return nil, err
	}
	limit := scanLimit(q.Limit)
	page := &meta.UserPage{}
	for hs := q.FromSlot; hs <= q.ToSlot && !page.More; hs++ {
		var lower []byte
		if hs == q.FromSlot && q.AfterUID != "" {
			lower = after(meta.UserKey(s.cfg.Group, hs, q.AfterUID))
		}
		n := len(page.Users)
		var err error
		page.Users, page.More, err = appendPage(s.db, meta.TablePrefix(s.cfg.Group, hs, meta.TableUser), lower, limit, page.Users, meta.DecodeUser)
		if err != nil {
			return nil, err
		}
		if len(page.Users) > n {
			page.LastSlot, page.LastUID = hs, page.Users[len(page.Users)-1].UID
		}
	}
	return page, nil
}
