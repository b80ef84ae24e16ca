package e2e

import (
	"encoding/json"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func hashSlot(key string) slotstore.HashSlot { return slotstore.HashSlotOfString(key) }

// deref is *p, or the zero value of T when p is nil: an optional member of a
// generated client type that the answer left out (or sent as null) reads as
// its zero value, as it did when the tests decoded into non-pointer fields.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// member is the raw JSON of the answer's top-level member name, verbatim
// ("" when absent). The generated client types decode free-form JSON (extra,
// config) into any, which loses the bytes; the API promises to return them
// as stored, so the tests check them here.
func (r response) member(name string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		return ""
	}
	return string(m[name])
}

// has reports whether the answer's top-level member name is present and not
// null. The generated client types make some required members plain values,
// where an absent member decodes as 0; tests that check presence use this.
func (r response) has(name string) bool {
	v := r.member(name)
	return v != "" && v != "null"
}

// js renders v as JSON for a failure message: the generated client types
// hold optional members as pointers, which %+v prints as addresses.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
