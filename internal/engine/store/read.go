package store

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// Get reads key from r (the DB, an indexed batch or a snapshot): a copy of
// its value, which outlives r's buffers, or found false when the key is
// absent. The store's own reads and the state machines' share it, so a
// missing key reads as "not found" the same way everywhere.
func Get(r pebble.Reader, key []byte) (value []byte, found bool, err error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}
