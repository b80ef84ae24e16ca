package fsm_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// unchanged runs f and fails if it changed anything of group g except the
// applied index (which every Update advances).
func unchanged(t *testing.T, db *store.DB, g slotstore.GroupID, what string, f func()) {
	t.Helper()
	before := spanWithout(t, db, g, meta.SysKey(g, meta.SysApplied))
	f()
	sameSpan(t, what+" wrote", spanWithout(t, db, g, meta.SysKey(g, meta.SysApplied)), before)
}

func TestUserCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())

	r1 := mustOK(t, apply(t, s, 1, createUser("alice", "Alice", 100)))[0]
	u, err := meta.DecodeUser(r1.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := meta.User{UID: "alice", Name: "Alice", CreatedAtMs: 100, UpdatedAtMs: 100, Revision: r1.Revision}
	if *u != want || r1.Revision != 1 {
		t.Fatalf("created %+v (rev %d), want %+v", *u, r1.Revision, want)
	}
	if got := getUser(t, s, "alice"); *got != want {
		t.Fatalf("stored %+v, want %+v", *got, want)
	}

	// Creating again is a conflict that carries the existing row, and writes nothing.
	unchanged(t, db, 1, "a conflicting create", func() {
		r := apply(t, s, 2, createUser("alice", "Impostor", 200))[0]
		wantCode(t, r, slotstore.CodeConflict)
		if r.Revision != r1.Revision || !bytes.Equal(r.Value, r1.Value) {
			t.Fatalf("conflict carries rev %d value %x, want the existing row", r.Revision, r.Value)
		}
	})

	// Put keeps the creation time and bumps the revision.
	r3 := mustOK(t, apply(t, s, 3, putUser("alice", "Alice B", 300)))[0]
	if r3.Revision != 2 {
		t.Fatalf("put revision %d, want 2 (the failed create assigns none)", r3.Revision)
	}
	want = meta.User{UID: "alice", Name: "Alice B", CreatedAtMs: 100, UpdatedAtMs: 300, Revision: 2}
	if got := getUser(t, s, "alice"); *got != want {
		t.Fatalf("after put %+v, want %+v", *got, want)
	}
	// Put of a new user creates it.
	mustOK(t, apply(t, s, 4, putUser("bob", "Bob", 400)))
	if got := getUser(t, s, "bob"); got.CreatedAtMs != 400 || got.UpdatedAtMs != 400 || got.Revision != 3 {
		t.Fatalf("bob %+v", got)
	}

	r5 := mustOK(t, apply(t, s, 5, delUser("alice")))[0]
	if r5.Revision != 4 || getUser(t, s, "alice") != nil {
		t.Fatalf("delete: rev %d, user %v", r5.Revision, getUser(t, s, "alice"))
	}
	unchanged(t, db, 1, "deleting an absent user", func() {
		wantCode(t, apply(t, s, 6, delUser("alice"))[0], slotstore.CodeNotFound)
	})
	// A deleted user can be created again, with a new creation time.
	mustOK(t, apply(t, s, 7, createUser("alice", "Again", 700)))
	if got := getUser(t, s, "alice"); got.CreatedAtMs != 700 || got.Revision != 5 {
		t.Fatalf("re-created %+v", got)
	}
}

func TestKVCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	var idx uint64
	next := func(cmds ...meta.Command) meta.Result {
		t.Helper()
		idx++
		return apply(t, s, idx, cmds...)[0]
	}
	failsWith := func(code slotstore.Code, cmd meta.Command) meta.Result {
		t.Helper()
		var r meta.Result
		unchanged(t, db, 1, fmt.Sprintf("a failed %T", cmd), func() {
			r = next(cmd)
			wantCode(t, r, code)
		})
		return r
	}
	value := func(key string) string {
		t.Helper()
		kv := getKV(t, s, key)
		if kv == nil {
			return "<absent>"
		}
		return string(kv.Value)
	}

	// Unconditional put, then an update that keeps the create revision.
	r := next(putKV("k", "v1"))
	kv, err := meta.DecodeKV(r.Value)
	if err != nil || !r.OK() {
		t.Fatal(r.Code, err)
	}
	if kv.Key != "k" || string(kv.Value) != "v1" || kv.Revision != 1 || kv.CreateRevision != 1 || kv.UpdatedAtMs != 1000 {
		t.Fatalf("put result %+v", kv)
	}
	r = next(putKVIf("k", "v2", meta.Cond{Kind: meta.CondIfRevision, Revision: 1}))
	if !r.OK() || r.Revision != 2 {
		t.Fatalf("CAS put at the current revision: %+v", r)
	}
	if got := getKV(t, s, "k"); got.CreateRevision != 1 || got.Revision != 2 || string(got.Value) != "v2" {
		t.Fatalf("after CAS %+v", got)
	}

	// CAS on a stale revision: failed_precondition carrying the current one.
	r = failsWith(slotstore.CodeFailedPrecondition, putKVIf("k", "v3", meta.Cond{Kind: meta.CondIfRevision, Revision: 1}))
	if r.Revision != 2 {
		t.Fatalf("stale CAS reports revision %d, want the current 2", r.Revision)
	}
	failsWith(slotstore.CodeFailedPrecondition, putKVIf("nokey", "v", meta.Cond{Kind: meta.CondIfRevision, Revision: 1}))
	failsWith(slotstore.CodeFailedPrecondition, putKVIf("k", "v", meta.Cond{Kind: meta.CondIfAbsent}))
	failsWith(slotstore.CodeFailedPrecondition, putKVIf("nokey", "v", meta.Cond{Kind: meta.CondIfExists}))
	if value("k") != "v2" || value("nokey") != "<absent>" {
		t.Fatalf("failed writes changed values: k=%s nokey=%s", value("k"), value("nokey"))
	}

	if r = next(putKVIf("new", "n1", meta.Cond{Kind: meta.CondIfAbsent})); !r.OK() || r.Revision != 3 {
		t.Fatalf("if-absent put: %+v", r)
	}
	if r = next(putKVIf("new", "n2", meta.Cond{Kind: meta.CondIfExists})); !r.OK() || r.Revision != 4 || value("new") != "n2" {
		t.Fatalf("if-exists put: %+v", r)
	}

	// Deletes under the same conditions.
	failsWith(slotstore.CodeFailedPrecondition, delKV("k", meta.Cond{Kind: meta.CondIfRevision, Revision: 1}))
	failsWith(slotstore.CodeFailedPrecondition, delKV("k", meta.Cond{Kind: meta.CondIfAbsent}))
	failsWith(slotstore.CodeFailedPrecondition, delKV("nokey", meta.Cond{Kind: meta.CondIfExists}))
	failsWith(slotstore.CodeFailedPrecondition, delKV("nokey", meta.Cond{Kind: meta.CondIfRevision, Revision: 2}))
	failsWith(slotstore.CodeNotFound, delKV("nokey", meta.Cond{}))
	if r = next(delKV("k", meta.Cond{Kind: meta.CondIfRevision, Revision: 2})); !r.OK() || r.Revision != 5 || value("k") != "<absent>" {
		t.Fatalf("CAS delete: %+v, k=%s", r, value("k"))
	}
	if r = next(delKV("new", meta.Cond{Kind: meta.CondIfExists})); !r.OK() || r.Revision != 6 || value("new") != "<absent>" {
		t.Fatalf("if-exists delete: %+v", r)
	}
	failsWith(slotstore.CodeNotFound, delKV("k", meta.Cond{}))

	// A key written again after its delete starts a new life.
	next(putKV("k", "again"))
	if got := getKV(t, s, "k"); got.CreateRevision != 7 || got.Revision != 7 {
		t.Fatalf("re-created key %+v", got)
	}
}

// TestRevisions: every successful change gets the next group revision —
// strictly increasing, unique within an entry and across Update calls;
// failures take none.
func TestRevisions(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	rng := rand.New(rand.NewPCG(1, 2))
	var last uint64
	seen := map[uint64]bool{}
	var entries []sm.Entry
	for e := 0; e < 20; e++ {
		var cmds []meta.Command
		for c := 0; c < 40; c++ {
			k := fmt.Sprintf("k%d", rng.IntN(30))
			switch rng.IntN(5) {
			case 0:
				cmds = append(cmds, putKVIf(k, "v", meta.Cond{Kind: meta.CondIfAbsent}))
			case 1:
				cmds = append(cmds, delKV(k, meta.Cond{}))
			case 2:
				cmds = append(cmds, createUser(k, "n", 1))
			default:
				cmds = append(cmds, putKV(k, fmt.Sprint(c)))
			}
		}
		entries = append(entries, sm.Entry{Index: uint64(e + 1), Cmd: encodeCmds(cmds...)})
	}
	// Half in one Update call, the rest one entry per call.
	out, err := s.Update(entries[:10])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[10:] {
		o, err := s.Update([]sm.Entry{e})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o...)
	}
	failures := 0
	for _, e := range out {
		rs, err := meta.DecodeResults(e.Result.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if !r.OK() {
				failures++
				continue
			}
			if r.Revision != last+1 || seen[r.Revision] {
				t.Fatalf("revision %d after %d", r.Revision, last)
			}
			seen[r.Revision] = true
			last = r.Revision
		}
	}
	if failures == 0 || len(seen) == 0 {
		t.Fatalf("workload too uniform: %d failures, %d successes", failures, len(seen))
	}
}

// TestSameKeyInOneEntry: later commands of an entry see the writes of
// earlier ones (the batch is indexed).
func TestSameKeyInOneEntry(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	mustOK(t, apply(t, s, 1, putKV("other", "x"))) // revision 1
	rs := apply(t, s, 2,
		putKV("k", "a"), // 2
		putKVIf("k", "b", meta.Cond{Kind: meta.CondIfRevision, Revision: 2}), // 3: sees the write above
		putKVIf("k", "c", meta.Cond{Kind: meta.CondIfRevision, Revision: 2}), // stale now
		putKVIf("k", "d", meta.Cond{Kind: meta.CondIfAbsent}),                // exists now
		delKV("k", meta.Cond{Kind: meta.CondIfRevision, Revision: 3}),        // 4
		putKVIf("k", "e", meta.Cond{Kind: meta.CondIfAbsent}),                // 5: absent again
		createUser("u", "one", 1),                                            // 6
		createUser("u", "two", 2),                                            // conflict with the one above
		delUser("u"),                                                         // 7
		delUser("u"),                                                         // not_found
	)
	want := []struct {
		code slotstore.Code
		rev  uint64
	}{{"", 2}, {"", 3}, {slotstore.CodeFailedPrecondition, 3}, {slotstore.CodeFailedPrecondition, 3},
		{"", 4}, {"", 5}, {"", 6}, {slotstore.CodeConflict, 6}, {"", 7}, {slotstore.CodeNotFound, 0}}
	for i, w := range want {
		if rs[i].Code != w.code || rs[i].Revision != w.rev {
			t.Fatalf("command %d: %q rev %d (%s), want %q rev %d", i, rs[i].Code, rs[i].Revision, rs[i].Message, w.code, w.rev)
		}
	}
	if kv := getKV(t, s, "k"); string(kv.Value) != "e" || kv.Revision != 5 || kv.CreateRevision != 5 {
		t.Fatalf("k = %+v", kv)
	}
	if u := getUser(t, s, "u"); u != nil {
		t.Fatalf("u = %+v", u)
	}
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s1 := newSM(t, db, 1, slotRange(0, 128))
	s2 := newSM(t, db, 2, slotRange(128, 256))
	mine, n := keyIn("k", 0, func(h slotstore.HashSlot) bool { return h < 128 })
	mine2, n := keyIn("k", n, func(h slotstore.HashSlot) bool { return h < 128 })
	theirs, _ := keyIn("k", n, func(h slotstore.HashSlot) bool { return h >= 128 })
	mustOK(t, apply(t, s1, 1, putKV(mine, "v")))
	mustOK(t, apply(t, s2, 1, putKV(theirs, "v")))

	g2 := span(t, db, 2)
	unchanged(t, db, 1, "wrong_group commands", func() {
		rs := apply(t, s1, 2,
			putKV(theirs, "x"),
			withIdem(putKV(theirs, "x"), "idem-1", 5), // not even an idempotency record
			createUser(theirs, "x", 1),
			putUser(theirs, "x", 1),
			delUser(theirs),
			delKV(theirs, meta.Cond{}),
		)
		for i, r := range rs {
			wantCode(t, r, slotstore.CodeWrongGroup)
			if r.Revision != 0 || r.Value != nil {
				t.Fatalf("command %d: wrong_group result carries %d/%x", i, r.Revision, r.Value)
			}
		}
	})
	sameSpan(t, "group 2 after group 1's wrong_group commands", span(t, db, 2), g2)
	if applied(t, s1) != 2 {
		t.Fatalf("applied %d, want 2 (a rejected command is still applied)", applied(t, s1))
	}

	// A hash slot that is not the route key's: invalid_argument, even when
	// the named slot is owned.
	bad := putKV(mine, "x")
	bad.HashSlot = (slotstore.HashSlotOfString(mine) + 1) % 128
	badUser := createUser(mine, "x", 1)
	badUser.HashSlot = 200 // unowned as well: the route check comes first
	unchanged(t, db, 1, "commands with a wrong hash slot", func() {
		rs := apply(t, s1, 3, bad, badUser)
		wantCode(t, rs[0], slotstore.CodeInvalidArgument)
		wantCode(t, rs[1], slotstore.CodeInvalidArgument)
	})

	// Good commands around a rejected one in the same entry still apply.
	rs := apply(t, s1, 4, putKV(mine2, "a"), putKV(theirs, "b"), putKV(mine, "c"))
	mustOK(t, rs[0:1])
	wantCode(t, rs[1], slotstore.CodeWrongGroup)
	mustOK(t, rs[2:3])
	if rs[2].Revision != rs[0].Revision+1 {
		t.Fatalf("revisions %d, %d", rs[0].Revision, rs[2].Revision)
	}

	// Reads of an unowned slot answer wrong_group.
	for _, q := range []any{
		&meta.GetKV{HashSlot: slotstore.HashSlotOfString(theirs), Key: theirs},
		&meta.GetUser{HashSlot: 200, UID: "x"},
		&meta.ScanUsers{FromSlot: 120, ToSlot: 130},
	} {
		if _, err := s1.Lookup(q); !isCode(err, slotstore.CodeWrongGroup) {
			t.Fatalf("Lookup(%T) of an unowned slot: %v, want wrong_group", q, err)
		}
	}
	if v, err := s2.Lookup(&meta.GetKV{HashSlot: slotstore.HashSlotOfString(theirs), Key: theirs}); err != nil || string(v.(*meta.KV).Value) != "v" {
		t.Fatalf("group 2 reads its own key: %v %v", v, err)
	}
	if _, err := s1.Lookup("what"); err == nil {
		t.Fatal("an unknown query type was answered")
	}
}

func TestMalformedInput(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	var idx uint64
	next := func() uint64 { idx++; return idx }

	good1, good2 := mustEncode(putKV("a", "1")), mustEncode(putKV("b", "2"))
	// A garbage command between two good ones: only it fails.
	rs := applyRaw(t, s, next(), meta.EncodeEntry([][]byte{good1, []byte("garbage!"), good2}))
	if len(rs) != 3 {
		t.Fatalf("%d results", len(rs))
	}
	mustOK(t, rs[0:1])
	wantCode(t, rs[1], slotstore.CodeInvalidArgument)
	mustOK(t, rs[2:3])
	if getKV(t, s, "a") == nil || getKV(t, s, "b") == nil {
		t.Fatal("the good commands around a garbage one were not applied")
	}

	// Commands that are almost right.
	mutate := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good1...)) }
	badCmds := map[string][]byte{
		"empty":           {},
		"version 2":       mutate(func(b []byte) []byte { b[0] = 2; return b }),
		"unknown op":      mutate(func(b []byte) []byte { b[1] = 99; return b }),
		"hash slot 0x1ff": mutate(func(b []byte) []byte { b[2], b[3] = 0x01, 0xff; return b }),
		"trailing byte":   mutate(func(b []byte) []byte { return append(b, 0) }),
		"truncated":       mutate(func(b []byte) []byte { return b[:len(b)-1] }),
		"bad condition":   mutate(func(b []byte) []byte { b[len(b)-2] = 9; return b }),
	}
	for name, raw := range badCmds {
		unchanged(t, db, 1, name, func() {
			rs := applyRaw(t, s, next(), meta.EncodeEntry([][]byte{raw}))
			if len(rs) != 1 {
				t.Fatalf("%s: %d results", name, len(rs))
			}
			wantCode(t, rs[0], slotstore.CodeInvalidArgument)
		})
	}

	// Entries that are not entries.
	for name, data := range map[string][]byte{
		"nil":          nil,
		"empty":        {},
		"one byte":     {1},
		"version 9":    {9, 1, 0},
		"zero count":   {1, 0},
		"huge count":   {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"short":        meta.EncodeEntry([][]byte{good1})[:5],
		"trailing":     append(meta.EncodeEntry([][]byte{good1}), 7),
		"huge length":  {1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"random bytes": []byte("\x01\x03\x02\x00\x00\x01"),
	} {
		unchanged(t, db, 1, "entry "+name, func() {
			before := applied(t, s)
			rs := applyRaw(t, s, next(), data)
			if len(rs) == 0 {
				t.Fatalf("entry %s: no results", name)
			}
			for _, r := range rs {
				wantCode(t, r, slotstore.CodeInvalidArgument)
			}
			if applied(t, s) != before+1 {
				t.Fatalf("entry %s: applied index did not advance", name)
			}
		})
	}

	// Random garbage and bit flips of valid entries never panic and never
	// fail Update; every entry gets decodable results.
	rng := rand.New(rand.NewPCG(7, 7))
	valid := encodeCmds(putKV("x", "y"), withIdem(createUser("u", "n", 1), "i", 1), delKV("x", meta.Cond{Kind: meta.CondIfRevision, Revision: 3}))
	var entries []sm.Entry
	for i := 0; i < 2000; i++ {
		var data []byte
		if i%2 == 0 {
			data = make([]byte, rng.IntN(80))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			if len(data) > 0 && rng.IntN(2) == 0 {
				data[0] = 1 // get past the version byte
			}
		} else {
			data = append([]byte(nil), valid...)
			for f := 0; f <= rng.IntN(3); f++ {
				data[rng.IntN(len(data))] ^= byte(1 << rng.IntN(8))
			}
		}
		entries = append(entries, sm.Entry{Index: next(), Cmd: data})
	}
	for lo := 0; lo < len(entries); lo += 100 {
		out, err := s.Update(entries[lo : lo+100])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range out {
			if _, err := meta.DecodeResults(e.Result.Data); err != nil {
				t.Fatalf("entry %d: undecodable result: %v", e.Index, err)
			}
		}
	}
	if applied(t, s) != idx {
		t.Fatalf("applied %d, want %d", applied(t, s), idx)
	}
}

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())

	first := mustOK(t, apply(t, s, 1, withIdem(putKV("k", "v1"), "req-1", 1000)))[0]
	if first.Replayed {
		t.Fatal("a first application is marked replayed")
	}
	// The same request again (a retry, later): the first result, nothing written.
	unchanged(t, db, 1, "a replay", func() {
		again := apply(t, s, 2, withIdem(putKV("k", "v1"), "req-1", 5000))[0]
		if !again.Replayed || again.Code != "" || again.Revision != first.Revision || !bytes.Equal(again.Value, first.Value) {
			t.Fatalf("replay %+v, want the first result %+v replayed", again, first)
		}
	})
	if kv := getKV(t, s, "k"); kv.Revision != first.Revision || kv.UpdatedAtMs != 1000 {
		t.Fatalf("after replay k = %+v", kv)
	}
	// The same key with another body: conflict, nothing written.
	unchanged(t, db, 1, "a reused idempotency key", func() {
		r := apply(t, s, 3, withIdem(putKV("k", "v2"), "req-1", 6000))[0]
		wantCode(t, r, slotstore.CodeConflict)
		if r.Replayed {
			t.Fatal("a conflicting reuse is marked replayed")
		}
	})
	// The revision counter did not move on the replay or the conflict.
	if r := mustOK(t, apply(t, s, 4, putKV("other", "x")))[0]; r.Revision != first.Revision+1 {
		t.Fatalf("next revision %d, want %d", r.Revision, first.Revision+1)
	}

	// A failed first result is final too: it is replayed, even after the
	// state that caused it changed.
	mustOK(t, apply(t, s, 5, createUser("u", "orig", 1)))
	failed := apply(t, s, 6, withIdem(createUser("u", "second", 2), "req-2", 2))[0]
	wantCode(t, failed, slotstore.CodeConflict)
	mustOK(t, apply(t, s, 7, delUser("u")))
	again := apply(t, s, 8, withIdem(createUser("u", "second", 3), "req-2", 3))[0]
	if !again.Replayed || again.Code != slotstore.CodeConflict || !bytes.Equal(again.Value, failed.Value) {
		t.Fatalf("replay of a failed result: %+v", again)
	}
	if getUser(t, s, "u") != nil {
		t.Fatal("the replayed create was applied")
	}

	// Within one entry, the second copy of a request is a replay of the first.
	rs := apply(t, s, 9, withIdem(putKV("z", "1"), "req-3", 9), withIdem(putKV("z", "1"), "req-3", 9))
	mustOK(t, rs)
	if rs[0].Replayed || !rs[1].Replayed || rs[1].Revision != rs[0].Revision {
		t.Fatalf("duplicate in one entry: %+v", rs)
	}

	// The records survive a snapshot: a recovered replica replays too.
	dst := openStore(t, t.TempDir())
	r := fsm.New(fsm.Config{Group: 1, DB: dst})
	if err := r.RecoverFromSnapshot(bytes.NewReader(snapshot(t, s)), nil); err != nil {
		t.Fatal(err)
	}
	if got := apply(t, r, 10, withIdem(putKV("k", "v1"), "req-1", 9999))[0]; !got.Replayed || got.Revision != first.Revision {
		t.Fatalf("replay on a recovered replica: %+v", got)
	}
}

func dedupRows(t *testing.T, db *store.DB, g slotstore.GroupID) (records, log int) {
	t.Helper()
	logPrefix := meta.SysKey(g, meta.SysDedupLog)
	for _, r := range span(t, db, g) {
		if bytes.HasPrefix(r.k, logPrefix) {
			log++
		}
	}
	return countTable(t, db, g, meta.TableDedup), log
}

func TestIdempotencyEvictionByCapacity(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots(), func(c *fsm.Config) { c.DedupCapacity = 5 })
	req := func(i int) meta.Command {
		return withIdem(putKV(fmt.Sprintf("k%d", i), "v"), fmt.Sprintf("req-%d", i), int64(i))
	}
	var firsts []meta.Result
	idx := uint64(0)
	for i := 0; i < 20; i += 4 { // several keyed commands per entry
		idx++
		firsts = append(firsts, mustOK(t, apply(t, s, idx, req(i), req(i+1), req(i+2), req(i+3)))...)
	}
	recs, logs := dedupRows(t, db, 1)
	if recs < 5 || recs > 7 || recs != logs {
		t.Fatalf("%d idempotency records, %d log rows after 20 with capacity 5", recs, logs)
	}
	// The newest are kept...
	idx++
	if r := apply(t, s, idx, req(19))[0]; !r.Replayed || r.Revision != firsts[19].Revision {
		t.Fatalf("newest key not replayed: %+v", r)
	}
	// ...the oldest are gone: reusing one applies again.
	idx++
	r := mustOK(t, apply(t, s, idx, req(0)))[0]
	if r.Replayed || r.Revision <= firsts[19].Revision {
		t.Fatalf("evicted key: %+v, want a new application", r)
	}
	recs, logs = dedupRows(t, db, 1)
	if recs > 7 || recs != logs {
		t.Fatalf("%d records, %d log rows", recs, logs)
	}
}

func TestIdempotencyEvictionByTTL(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots(), func(c *fsm.Config) { c.DedupTTL = time.Second })
	old := mustOK(t, apply(t, s, 1, withIdem(putKV("a", "v"), "old", 0)))[0]
	mustOK(t, apply(t, s, 2, withIdem(putKV("b", "v"), "mid", 500)))
	// Within the TTL it is replayed.
	if r := apply(t, s, 3, withIdem(putKV("a", "v"), "old", 900))[0]; !r.Replayed || r.Revision != old.Revision {
		t.Fatalf("within TTL: %+v", r)
	}
	if recs, _ := dedupRows(t, db, 1); recs != 2 {
		t.Fatalf("%d records within the TTL, want 2", recs)
	}
	// A keyed command long after evicts both older records.
	mustOK(t, apply(t, s, 4, withIdem(putKV("c", "v"), "new", 5000)))
	if recs, logs := dedupRows(t, db, 1); recs != 1 || logs != 1 {
		t.Fatalf("%d records, %d log rows after the TTL, want 1", recs, logs)
	}
	r := mustOK(t, apply(t, s, 5, withIdem(putKV("a", "v"), "old", 5001)))[0]
	if r.Replayed || r.Revision == old.Revision {
		t.Fatalf("expired key replayed: %+v", r)
	}
}
