package fsm_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// allSlots is every hash slot.
func allSlots() []slotstore.HashSlot {
	out := make([]slotstore.HashSlot, slotstore.HashSlotCount)
	for i := range out {
		out[i] = slotstore.HashSlot(i)
	}
	return out
}

// slotRange is [from, to).
func slotRange(from, to int) []slotstore.HashSlot {
	var out []slotstore.HashSlot
	for i := from; i < to; i++ {
		out = append(out, slotstore.HashSlot(i))
	}
	return out
}

// openStore opens a store in dir and closes it when the test ends.
func openStore(tb testing.TB, dir string) *store.DB {
	tb.Helper()
	db := rawOpen(tb, dir)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// rawOpen opens a store the caller closes.
func rawOpen(tb testing.TB, dir string) *store.DB {
	tb.Helper()
	db, err := store.Open(dir, &store.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	return db
}

// newSM builds and opens a state machine of group g on db.
func newSM(tb testing.TB, db *store.DB, g slotstore.GroupID, genesis []slotstore.HashSlot, mod ...func(*fsm.Config)) *fsm.StateMachine {
	tb.Helper()
	cfg := fsm.Config{Group: g, DB: db, Genesis: genesis}
	for _, m := range mod {
		m(&cfg)
	}
	s := fsm.New(cfg)
	if _, err := s.Open(nil); err != nil {
		tb.Fatalf("open group %d: %v", g, err)
	}
	return s
}

// keyIn returns the first key "<prefix>-<n>" (n from start) whose hash slot
// is accepted by ok, and the n after it.
func keyIn(prefix string, start int, ok func(slotstore.HashSlot) bool) (string, int) {
	for n := start; ; n++ {
		k := fmt.Sprintf("%s-%d", prefix, n)
		if ok(slotstore.HashSlotOfString(k)) {
			return k, n + 1
		}
	}
}

// keysIn returns count distinct keys whose hash slots are in slots.
func keysIn(prefix string, count int, slots []slotstore.HashSlot) []string {
	set := map[slotstore.HashSlot]bool{}
	for _, s := range slots {
		set[s] = true
	}
	out := make([]string, 0, count)
	n := 0
	for len(out) < count {
		var k string
		k, n = keyIn(prefix, n, func(s slotstore.HashSlot) bool { return set[s] })
		out = append(out, k)
	}
	return out
}

func hdr(key, idem string, timeMs int64) meta.Header {
	return meta.Header{HashSlot: slotstore.HashSlotOfString(key), TimeMs: timeMs, IdempotencyKey: idem}
}

func putKV(key, value string) *meta.PutKV {
	return &meta.PutKV{Header: hdr(key, "", 1000), Key: key, Value: []byte(value)}
}

func putKVIf(key, value string, cond meta.Cond) *meta.PutKV {
	c := putKV(key, value)
	c.Cond = cond
	return c
}

func delKV(key string, cond meta.Cond) *meta.DeleteKV {
	return &meta.DeleteKV{Header: hdr(key, "", 1000), Key: key, Cond: cond}
}

func createUser(uid, name string, timeMs int64) *meta.CreateUser {
	return &meta.CreateUser{Header: hdr(uid, "", timeMs), User: meta.User{UID: uid, Name: name}}
}

func putUser(uid, name string, timeMs int64) *meta.PutUser {
	return &meta.PutUser{Header: hdr(uid, "", timeMs), User: meta.User{UID: uid, Name: name}}
}

func delUser(uid string) *meta.DeleteUser {
	return &meta.DeleteUser{Header: hdr(uid, "", 1000), UID: uid}
}

// withIdem sets the idempotency key (and time) of c and returns it.
func withIdem[C meta.Command](c C, idem string, timeMs int64) C {
	c.Head().IdempotencyKey = idem
	c.Head().TimeMs = timeMs
	return c
}

func encodeCmds(cmds ...meta.Command) []byte {
	raw := make([][]byte, len(cmds))
	for i, c := range cmds {
		raw[i] = mustEncode(c)
	}
	return meta.EncodeEntry(raw)
}

// apply applies one entry holding cmds at index and returns their results.
func apply(tb testing.TB, s *fsm.StateMachine, index uint64, cmds ...meta.Command) []meta.Result {
	tb.Helper()
	return applyRaw(tb, s, index, encodeCmds(cmds...))
}

// applyRaw applies one entry with payload data at index.
func applyRaw(tb testing.TB, s *fsm.StateMachine, index uint64, data []byte) []meta.Result {
	tb.Helper()
	out, err := s.Update([]sm.Entry{{Index: index, Cmd: data}})
	if err != nil {
		tb.Fatalf("update at %d: %v", index, err)
	}
	if len(out) != 1 {
		tb.Fatalf("update returned %d entries", len(out))
	}
	rs, err := meta.DecodeResults(out[0].Result.Data)
	if err != nil {
		tb.Fatalf("decode results at %d: %v", index, err)
	}
	malformedEntry := out[0].Result.Value == 0 && len(rs) == 1 && rs[0].Code == slotstore.CodeInvalidArgument
	if int(out[0].Result.Value) != len(rs) && !malformedEntry {
		tb.Fatalf("Result.Value %d, %d results", out[0].Result.Value, len(rs))
	}
	return rs
}

// mustOK fails unless every result succeeded.
func mustOK(tb testing.TB, rs []meta.Result) []meta.Result {
	tb.Helper()
	for i, r := range rs {
		if !r.OK() {
			tb.Fatalf("command %d: %s: %s", i, r.Code, r.Message)
		}
	}
	return rs
}

func wantCode(tb testing.TB, r meta.Result, code slotstore.Code) {
	tb.Helper()
	if r.Code != code {
		tb.Fatalf("result code %q (%s), want %q", r.Code, r.Message, code)
	}
}

type row struct{ k, v []byte }

// span returns every key/value of group g, in key order.
func span(tb testing.TB, db *store.DB, g slotstore.GroupID) []row {
	tb.Helper()
	p := meta.GroupPrefix(g)
	it, err := db.Pebble().NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: meta.PrefixEnd(p)})
	if err != nil {
		tb.Fatal(err)
	}
	var out []row
	for it.First(); it.Valid(); it.Next() {
		out = append(out, row{append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)})
	}
	if err := it.Close(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// spanWithout is span minus the given keys.
func spanWithout(tb testing.TB, db *store.DB, g slotstore.GroupID, skip ...[]byte) []row {
	tb.Helper()
	var out []row
outer:
	for _, r := range span(tb, db, g) {
		for _, s := range skip {
			if bytes.Equal(r.k, s) {
				continue outer
			}
		}
		out = append(out, r)
	}
	return out
}

// sameSpan fails with the first difference between two spans.
func sameSpan(tb testing.TB, what string, got, want []row) {
	tb.Helper()
	if d := diffSpan(got, want); d != "" {
		tb.Fatalf("%s: spans differ: %s", what, d)
	}
}

func diffSpan(got, want []row) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if !bytes.Equal(got[i].k, want[i].k) {
			return fmt.Sprintf("row %d: key %s, want %s", i, hex.EncodeToString(got[i].k), hex.EncodeToString(want[i].k))
		}
		if !bytes.Equal(got[i].v, want[i].v) {
			return fmt.Sprintf("row %d (key %s): value %s, want %s", i, hex.EncodeToString(got[i].k),
				short(got[i].v), short(want[i].v))
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	return ""
}

func short(b []byte) string {
	s := hex.EncodeToString(b)
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// countTable counts the rows of table t in group g.
func countTable(tb testing.TB, db *store.DB, g slotstore.GroupID, t meta.Table) int {
	tb.Helper()
	n := 0
	for _, r := range span(tb, db, g) {
		if rg, _, rt, _, ok := meta.SplitRowKey(r.k); ok && rg == g && rt == t {
			n++
		}
	}
	return n
}

func getKV(tb testing.TB, s *fsm.StateMachine, key string) *meta.KV {
	tb.Helper()
	v, err := s.Lookup(&meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key})
	if err != nil {
		tb.Fatalf("lookup %q: %v", key, err)
	}
	return v.(*meta.KV)
}

func getUser(tb testing.TB, s *fsm.StateMachine, uid string) *meta.User {
	tb.Helper()
	v, err := s.Lookup(&meta.GetUser{HashSlot: slotstore.HashSlotOfString(uid), UID: uid})
	if err != nil {
		tb.Fatalf("lookup user %q: %v", uid, err)
	}
	return v.(*meta.User)
}

func applied(tb testing.TB, s *fsm.StateMachine) uint64 {
	tb.Helper()
	v, err := s.Lookup(fsm.AppliedQuery{})
	if err != nil {
		tb.Fatal(err)
	}
	return v.(uint64)
}

// snapshot saves s's image.
func snapshot(tb testing.TB, s *fsm.StateMachine) []byte {
	tb.Helper()
	ctx, err := s.PrepareSnapshot()
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.SaveSnapshot(ctx, &buf, nil); err != nil {
		tb.Fatalf("save snapshot: %v", err)
	}
	return buf.Bytes()
}

func isCode(err error, code slotstore.Code) bool {
	var e *slotstore.Error
	return errors.As(err, &e) && e.Code == code
}

// mustEncode encodes a command the test knows is within every codec limit.
func mustEncode(c meta.Command) []byte {
	b, err := meta.EncodeCommand(c)
	if err != nil {
		panic(err)
	}
	return b
}
