// Package migrations holds the ordered storage format migrations of the
// slotmeta store.
//
// The store keeps one node-wide format-version record. When it opens, it
// runs every migration whose version is above the recorded one, in order,
// each in one atomic batch together with the new version record, before any
// group serves. A store written by a newer binary (a version above Latest)
// is refused rather than guessed at. Migrations are deterministic functions
// of the store's contents: every node of a cluster reaches the same bytes.
//
// Adding a migration: append to All with the next version, never edit or
// reorder a released one, and add a test that builds the old format and
// checks the new one.
package migrations

import (
	"errors"
	"fmt"
)

// KV is the view of the store a migration works on: reads see the
// migration's own earlier writes; writes commit together with the version
// record, or not at all.
type KV interface {
	Get(key []byte) (value []byte, ok bool, err error)
	Set(key, value []byte) error
	Delete(key []byte) error
	// Scan calls fn for every key with the prefix, in key order.
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// Migration moves the store from Version-1 to Version.
type Migration struct {
	Version uint32
	Name    string
	Up      func(KV) error
}

// All is the ordered list of migrations. Version 1 is the initial format:
// keys as meta/keys.go lays them out, values in the version-1 codec.
var All = []Migration{
	{Version: 1, Name: "initial format", Up: func(KV) error { return nil }},
}

// Latest is the format version this binary writes.
func Latest() uint32 { return All[len(All)-1].Version }

// ErrTooNew is returned for a store written by a newer binary.
var ErrTooNew = errors.New("migrations: store format is newer than this binary")

// Pending returns the migrations to run for a store at version current, in
// order, or ErrTooNew.
func Pending(list []Migration, current uint32) ([]Migration, error) {
	for i, m := range list {
		if m.Version != uint32(i+1) {
			return nil, fmt.Errorf("migrations: migration %d (%q) has version %d", i, m.Name, m.Version)
		}
	}
	if current > uint32(len(list)) {
		return nil, fmt.Errorf("%w: store is at %d, binary knows %d", ErrTooNew, current, len(list))
	}
	return list[current:], nil
}
