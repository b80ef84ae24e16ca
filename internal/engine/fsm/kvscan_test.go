package fsm_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// scanKVAll pages q through its slots with q.Limit and returns every key
// seen, in order, as "slot/key".
func scanKVAll(t *testing.T, s *fsm.StateMachine, q meta.ScanKV) []string {
	t.Helper()
	var got []string
	for pages := 0; ; pages++ {
		v, err := s.Lookup(&q)
		if err != nil {
			t.Fatalf("scan %+v: %v", q, err)
		}
		page := v.(*meta.KVPage)
		if len(page.KVs) > q.Limit {
			t.Fatalf("a page of %d keys, limit %d", len(page.KVs), q.Limit)
		}
		for _, kv := range page.KVs {
			got = append(got, fmt.Sprintf("%d/%s", slotstore.HashSlotOfString(kv.Key), kv.Key))
			if q.KeysOnly != (kv.Value == nil) {
				t.Fatalf("keys only %v, value %q", q.KeysOnly, kv.Value)
			}
		}
		if !page.More {
			return got
		}
		last := page.KVs[len(page.KVs)-1].Key
		q.FromSlot, q.AfterKey = slotstore.HashSlotOfString(last), last
		if pages > 10000 {
			t.Fatal("the scan does not end")
		}
	}
}

// TestScanKVSeeksItsBounds: prefix, start/end and the cursor bound each
// slot's scan, pages of any size list every matching key once in (slot,
// key) order — keys that extend each other too ("ab" < "ab\x00" < "ab\xff")
// — and keys only leaves the values out.
func TestScanKVSeeksItsBounds(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, slotRange(0, 256))
	var keys []string
	for _, p := range []string{"app/", "apq", "ab", "b/"} {
		for i := range 40 {
			keys = append(keys, fmt.Sprintf("%s%03d", p, i))
		}
	}
	keys = append(keys, "ab", "ab\x00", "ab\xff", "app", "app/\xff\xff", "\xff\xff")
	var cmds []meta.Command
	for _, k := range keys {
		cmds = append(cmds, putKV(k, "v-"+k))
	}
	mustOK(t, apply(t, s, 1, cmds...))

	want := func(match func(string) bool) []string {
		var in []string
		for _, k := range keys {
			if match(k) {
				in = append(in, k)
			}
		}
		slices.SortFunc(in, func(a, b string) int { // (hash slot, key) order
			return cmp.Or(cmp.Compare(slotstore.HashSlotOfString(a), slotstore.HashSlotOfString(b)), strings.Compare(a, b))
		})
		var out []string
		for _, k := range in {
			out = append(out, fmt.Sprintf("%d/%s", slotstore.HashSlotOfString(k), k))
		}
		return out
	}
	cases := []struct {
		name string
		q    meta.ScanKV
		want []string
	}{
		{"everything", meta.ScanKV{}, want(func(string) bool { return true })},
		{"prefix app/", meta.ScanKV{Prefix: "app/"}, want(func(k string) bool { return strings.HasPrefix(k, "app/") })},
		{"prefix ab", meta.ScanKV{Prefix: "ab"}, want(func(k string) bool { return strings.HasPrefix(k, "ab") })},
		{"prefix \\xff", meta.ScanKV{Prefix: "\xff"}, want(func(k string) bool { return strings.HasPrefix(k, "\xff") })},
		{"range [apq, b/010)", meta.ScanKV{Start: "apq", End: "b/010"}, want(func(k string) bool { return k >= "apq" && k < "b/010" })},
		{"prefix and range", meta.ScanKV{Prefix: "b/", Start: "b/005", End: "b/030"}, want(func(k string) bool {
			return strings.HasPrefix(k, "b/") && k >= "b/005" && k < "b/030"
		})},
		{"nothing", meta.ScanKV{Prefix: "zz"}, nil},
	}
	for _, c := range cases {
		for _, limit := range []int{1, 3, 17, 1000} {
			t.Run(fmt.Sprintf("%s/limit=%d", c.name, limit), func(t *testing.T) {
				q := c.q
				q.FromSlot, q.ToSlot, q.Limit, q.KeysOnly = 0, 255, limit, limit == 3
				if got := scanKVAll(t, s, q); !slices.Equal(got, c.want) {
					t.Fatalf("got %d keys %q\nwant %d %q", len(got), got, len(c.want), c.want)
				}
			})
		}
	}

	// A slot the group does not own is refused (the listing asks again).
	other := newSM(t, openStore(t, t.TempDir()), 2, slotRange(0, 10))
	if _, err := other.Lookup(&meta.ScanKV{FromSlot: 5, ToSlot: 12, Limit: 1}); slotstore.ErrorCode(err) != slotstore.CodeWrongGroup {
		t.Fatalf("a scan past the owned slots: %v", err)
	}
}
