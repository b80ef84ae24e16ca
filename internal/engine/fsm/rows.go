package fsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Reading, writing and listing one resource family's rows, given its codec
// (meta.DecodeUser and meta.EncodeUser, …). Apply reads and writes through
// the applier's get and set, so every change still passes there; lookups
// read committed state.

// readRow reads and decodes one row through the batch. A row that does not
// decode is a storage fault: the Update fails rather than diverge.
func readRow[T any](a *applier, key []byte, decode func([]byte) (T, error)) (T, bool) {
	v, _, found := readRowRaw(a, key, decode)
	return v, found
}

// readRowRaw is readRow that also returns the row as stored, for answers
// that carry it unchanged.
func readRowRaw[T any](a *applier, key []byte, decode func([]byte) (T, error)) (T, []byte, bool) {
	var zero T
	raw, found := a.get(key)
	if !found {
		return zero, nil, false
	}
	v, err := decode(raw)
	if err != nil {
		a.fail(fmt.Errorf("decoding row %x: %w", key, err))
		return zero, nil, false
	}
	return v, raw, true
}

// writeRow gives row the group's next revision (through rev, its Revision
// field), stores it at key and answers it.
func writeRow[T any](a *applier, key []byte, row T, rev *uint64, encode func(T) []byte) meta.Result {
	*rev = a.nextRevision()
	v := encode(row)
	a.set(key, v)
	return meta.Result{Revision: *rev, Value: v}
}

// deleteExisting deletes the row at key that a command found, or answers
// res, why it found none, when res is not nil.
func (a *applier) deleteExisting(key []byte, res *meta.Result) meta.Result {
	if res != nil {
		return *res
	}
	a.del(key)
	return meta.Result{Revision: a.nextRevision()}
}

// rowNotFound answers a command whose row is missing.
func rowNotFound(format string, args ...any) *meta.Result {
	return &meta.Result{Code: slotstore.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// getRow answers a lookup of one committed row: the decoded row, or the
// zero T (a nil pointer) when there is none.
func getRow[T any](s reader, key []byte, decode func([]byte) (T, error)) (T, error) {
	var zero T
	raw, found, err := s.get(key)
	if err != nil || !found {
		return zero, err
	}
	return decode(raw)
}

// appendPage appends to items the decoded values of [lower, end of prefix
// p) of r, in key order, until items holds limit of them (lower nil means
// p); more says whether another value followed.
func appendPage[T any](r pebble.Reader, p, lower []byte, limit int, items []T, decode func([]byte) (T, error)) (_ []T, more bool, _ error) {
	err := scanReader(r, p, lower, func(_, v []byte) (bool, error) {
		if len(items) == limit {
			more = true
			return false, nil
		}
		x, err := decode(v)
		if err != nil {
			return false, err
		}
		items = append(items, x)
		return true, nil
	})
	return items, more, err
}
