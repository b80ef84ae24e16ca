package fsm

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Rows a user holds about a channel (memberships, CMD bindings): keyed by
// uid | channel in their table, checked, looked up and listed (a user's
// memberships through their activity index) the same way.

// userChannelProblem checks the identity of a user's row about a channel.
func userChannelProblem(u *meta.UserChannel) string {
	if u.UID == "" {
		return "uid must not be empty"
	}
	return meta.ChannelRefProblem(u.ChannelType, u.ChannelID)
}

// existingUserChannel reads u's row in table that a command acts on, or
// answers why there is none: an invalid identity, or not_found ("user … has
// no <what> channel …").
func existingUserChannel[T any](a *applier, hs slotstore.HashSlot, table meta.Table, u *meta.UserChannel, decode func([]byte) (T, error), what string) (row T, raw, key []byte, res *meta.Result) {
	if p := userChannelProblem(u); p != "" {
		r := invalidResult("%s", p)
		return row, nil, nil, &r
	}
	key = meta.UserChannelKey(a.sm.cfg.Group, hs, table, u.UID, u.ChannelType, u.ChannelID)
	row, raw, found := readRowRaw(a, key, decode)
	if !found {
		return row, nil, nil, rowNotFound("user %q has no %s channel %d/%q", u.UID, what, u.ChannelType, u.ChannelID)
	}
	return row, raw, key, nil
}

// getUserChannel answers a lookup of u's row in table: the decoded row, or
// the zero T (a nil pointer) when there is none.
func getUserChannel[T any](s reader, hs slotstore.HashSlot, table meta.Table, u *meta.UserChannel, decode func([]byte) (T, error)) (T, error) {
	if err := s.checkRouted(hs, u.UID); err != nil {
		var zero T
		return zero, err
	}
	return getRow(s, meta.UserChannelKey(s.cfg.Group, hs, table, u.UID, u.ChannelType, u.ChannelID), decode)
}

// listUserRows answers a listing of uid's rows in table, in key order, from
// the first or, when afterKey is not nil, after it; more says whether
// another row followed the page.
func listUserRows[T any](s reader, hs slotstore.HashSlot, table meta.Table, uid string, afterKey []byte, limit int, decode func([]byte) (T, error)) (_ []T, more bool, _ error) {
	if err := s.checkRouted(hs, uid); err != nil {
		return nil, false, err
	}
	var lower []byte
	if afterKey != nil {
		lower = after(afterKey)
	}
	return appendPage(s.db, meta.UserTablePrefix(s.cfg.Group, hs, table, uid), lower, scanLimit(limit), nil, decode)
}
