package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func TestGenesis(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := fsm.New(fsm.Config{Group: 3, DB: db, Genesis: []slotstore.HashSlot{7, 3, 3, 255}})
	idx, err := s.Open(nil)
	if err != nil || idx != 0 {
		t.Fatalf("Open = %d, %v; want 0, nil", idx, err)
	}
	owned, err := s.Lookup(fsm.OwnedQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []slotstore.HashSlot{3, 7, 255}; !reflect.DeepEqual(owned, want) {
		t.Fatalf("owned %v, want %v", owned, want)
	}
	if got := applied(t, s); got != 0 {
		t.Fatalf("applied %d, want 0", got)
	}
	if s.Group() != 3 {
		t.Fatalf("Group() = %d", s.Group())
	}

	// The genesis is written once: a later Open with another genesis (a
	// restart after the HashToGroup table changed) keeps the replicated set.
	s2 := newSM(t, db, 3, []slotstore.HashSlot{1})
	if owned, _ := s2.Lookup(fsm.OwnedQuery{}); !reflect.DeepEqual(owned, []slotstore.HashSlot{3, 7, 255}) {
		t.Fatalf("after reopen with another genesis: owned %v", owned)
	}

	// Another group on the same store has its own genesis.
	s4 := newSM(t, db, 4, slotRange(100, 102))
	if owned, _ := s4.Lookup(fsm.OwnedQuery{}); !reflect.DeepEqual(owned, []slotstore.HashSlot{100, 101}) {
		t.Fatalf("group 4 owned %v", owned)
	}
	// Slot 7 is group 3's, not group 4's.
	k, _ := keyIn("g", 0, func(h slotstore.HashSlot) bool { return h == 7 })
	wantCode(t, apply(t, s4, 1, putKV(k, "v"))[0], slotstore.CodeWrongGroup)
	mustOK(t, apply(t, s, 1, putKV(k, "v")))
}

func TestOpenStopped(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	stop := make(chan struct{})
	close(stop)
	if _, err := fsm.New(fsm.Config{Group: 1, DB: db}).Open(stop); !errors.Is(err, sm.ErrOpenStopped) {
		t.Fatalf("Open with a closed stop channel: %v, want ErrOpenStopped", err)
	}
	if got := span(t, db, 1); len(got) != 0 {
		t.Fatalf("a stopped Open wrote %d rows", len(got))
	}
}

func TestReopenAfterSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := rawOpen(t, dir)
	var notified []uint64
	s := newSM(t, db, 1, allSlots(), func(c *fsm.Config) {
		c.OnApplied = func(g slotstore.GroupID, idx uint64, took time.Duration) {
			if g != 1 || took <= 0 {
				t.Errorf("OnApplied group %d, took %v", g, took)
			}
			notified = append(notified, idx)
		}
	})
	// Raft indexes handed to an on-disk state machine need not be dense.
	var want []uint64
	for i := 1; i <= 20; i++ {
		idx := uint64(i * 3)
		mustOK(t, apply(t, s, idx, putKV("k"+strconv.Itoa(i), "v"+strconv.Itoa(i))))
		want = append(want, idx)
	}
	if !reflect.DeepEqual(notified, want) {
		t.Fatalf("OnApplied saw %v, want %v", notified, want)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	before := span(t, db, 1)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openStore(t, dir)
	s = fsm.New(fsm.Config{Group: 1, DB: db, Genesis: []slotstore.HashSlot{1}})
	idx, err := s.Open(nil)
	if err != nil || idx != 60 {
		t.Fatalf("reopen: Open = %d, %v; want 60", idx, err)
	}
	sameSpan(t, "after reopen", span(t, db, 1), before)
	if kv := getKV(t, s, "k20"); kv == nil || string(kv.Value) != "v20" || kv.Revision != 20 {
		t.Fatalf("k20 after reopen: %+v", kv)
	}
	// The revision counter is reloaded: the next write continues it.
	if r := mustOK(t, apply(t, s, 61, putKV("k21", "v")))[0]; r.Revision != 21 {
		t.Fatalf("first revision after reopen %d, want 21", r.Revision)
	}
}

// TestReopenWithoutSync closes the store without Sync: Open must return an
// index no later than the last applied one, and the rows must be exactly
// those of that index — a suffix may be lost, never a hole. Replaying the
// rest (as dragonboat does from its log) must converge with a replica that
// never restarted.
func TestReopenWithoutSync(t *testing.T) {
	t.Parallel()
	const n = 200
	entry := func(i int) []meta.Command {
		return []meta.Command{
			putKV("ctr", strconv.Itoa(i)),
			putKV(fmt.Sprintf("k%03d", i), strconv.Itoa(i)),
		}
	}
	refDB := openStore(t, t.TempDir())
	ref := newSM(t, refDB, 1, allSlots())

	dir := t.TempDir()
	db := rawOpen(t, dir)
	s := newSM(t, db, 1, allSlots())
	for i := 1; i <= n; i++ {
		mustOK(t, apply(t, s, uint64(i), entry(i)...))
		mustOK(t, apply(t, ref, uint64(i), entry(i)...))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openStore(t, dir)
	s = fsm.New(fsm.Config{Group: 1, DB: db})
	idx, err := s.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	if idx > n {
		t.Fatalf("Open returned %d, past the last applied %d", idx, n)
	}
	// No holes: the rows are exactly those of idx.
	ctr := getKV(t, s, "ctr")
	switch {
	case idx == 0 && ctr != nil:
		t.Fatalf("index 0 but ctr = %q", ctr.Value)
	case idx > 0 && (ctr == nil || string(ctr.Value) != strconv.FormatUint(idx, 10)):
		t.Fatalf("index %d but ctr = %+v", idx, ctr)
	}
	for i := 1; i <= n; i++ {
		kv := getKV(t, s, fmt.Sprintf("k%03d", i))
		if (kv != nil) != (uint64(i) <= idx) {
			t.Fatalf("index %d: k%03d present=%v", idx, i, kv != nil)
		}
	}
	for i := int(idx) + 1; i <= n; i++ {
		mustOK(t, apply(t, s, uint64(i), entry(i)...))
	}
	sameSpan(t, "after replay", span(t, db, 1), span(t, refDB, 1))
}

// TestOneBatchPerUpdate: all commands of all entries of one Update call go
// into one Pebble batch, together with the applied index, committed once.
func TestOneBatchPerUpdate(t *testing.T) {
	t.Parallel()
	const g = 1
	db := openStore(t, t.TempDir())
	s := newSM(t, db, g, allSlots())
	mustOK(t, apply(t, s, 1, putKV("first", "x")))

	const nEntries, perEntry = 8, 32
	var entries []sm.Entry
	var keys []string
	for e := 0; e < nEntries; e++ {
		var cmds []meta.Command
		for c := 0; c < perEntry; c++ {
			k := fmt.Sprintf("e%d-c%d", e, c)
			keys = append(keys, k)
			cmds = append(cmds, putKV(k, k))
		}
		entries = append(entries, sm.Entry{Index: uint64(2 + e), Cmd: encodeCmds(cmds...)})
	}
	last := uint64(1 + nEntries)

	commits := 0
	s.SetBeforeCommit(func(b *pebble.Batch) {
		commits++
		v, closer, err := b.Get(meta.SysKey(g, meta.SysApplied))
		if err != nil {
			t.Errorf("applied index not in the batch: %v", err)
			return
		}
		if got := binary.BigEndian.Uint64(v); got != last {
			t.Errorf("batch applied index %d, want %d", got, last)
		}
		_ = closer.Close()
		for _, k := range keys {
			key := meta.KVKey(g, slotstore.HashSlotOfString(k), k)
			if _, c, err := b.Get(key); err != nil {
				t.Errorf("%s not in the batch: %v", k, err)
			} else {
				_ = c.Close()
			}
			// Nothing of this Update is committed before the one commit.
			if _, c, err := db.Pebble().Get(key); !errors.Is(err, pebble.ErrNotFound) {
				if err == nil {
					_ = c.Close()
				}
				t.Errorf("%s committed before the batch: %v", k, err)
			}
		}
		if v, c, err := db.Pebble().Get(meta.SysKey(g, meta.SysApplied)); err != nil || binary.BigEndian.Uint64(v) != 1 {
			t.Errorf("stored applied index moved before the commit: %v", err)
		} else {
			_ = c.Close()
		}
		// Two Sets per command (the row, its change record), one per slot
		// written (its change-log head), plus the applied index and the
		// revision counter.
		slots := map[slotstore.HashSlot]bool{}
		for _, k := range keys {
			slots[slotstore.HashSlotOfString(k)] = true
		}
		if got, want := b.Count(), uint32(2*nEntries*perEntry+len(slots)+2); got != want {
			t.Errorf("batch holds %d operations, want %d", got, want)
		}
	})
	out, err := s.Update(entries)
	if err != nil {
		t.Fatal(err)
	}
	if commits != 1 {
		t.Fatalf("%d commits for one Update, want 1", commits)
	}
	for i := range out {
		rs, err := meta.DecodeResults(out[i].Result.Data)
		if err != nil || len(rs) != perEntry {
			t.Fatalf("entry %d: %d results, %v", i, len(rs), err)
		}
		mustOK(t, rs)
	}
	if got := applied(t, s); got != last {
		t.Fatalf("applied %d, want %d", got, last)
	}

	// An Update of only malformed entries still commits once and advances
	// the applied index.
	s.SetBeforeCommit(func(b *pebble.Batch) { commits++ })
	if _, err := s.Update([]sm.Entry{{Index: last + 1, Cmd: []byte{0xde, 0xad}}, {Index: last + 2}}); err != nil {
		t.Fatal(err)
	}
	if commits != 2 || applied(t, s) != last+2 {
		t.Fatalf("commits %d, applied %d", commits, applied(t, s))
	}
	// An empty Update commits nothing.
	if out, err := s.Update(nil); err != nil || len(out) != 0 || commits != 2 {
		t.Fatalf("empty Update: %v, %d commits", err, commits)
	}
}

// TestSharedStore runs several groups on one store: each writes only under
// its own prefix, keeps its own revision counter and applied index, and
// reopens to its own index.
func TestSharedStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := rawOpen(t, dir)
	groups := []slotstore.GroupID{1, 2, 7}
	sms := map[slotstore.GroupID]*fsm.StateMachine{}
	for _, g := range groups {
		sms[g] = newSM(t, db, g, allSlots())
	}
	idx := map[slotstore.GroupID]uint64{}
	for round := 1; round <= 10; round++ {
		for _, g := range groups {
			idx[g] += uint64(g) // different index progressions
			rs := mustOK(t, apply(t, sms[g], idx[g],
				putKV("shared", fmt.Sprintf("g%d-r%d", g, round)),
				createUser(fmt.Sprintf("u-%d-%d", g, round), "n", 5)))
			if rs[0].Revision != uint64(2*round-1) {
				t.Fatalf("group %d round %d: revision %d, want %d (own counter)", g, round, rs[0].Revision, 2*round-1)
			}
		}
	}
	for _, g := range groups {
		if kv := getKV(t, sms[g], "shared"); string(kv.Value) != fmt.Sprintf("g%d-r10", g) {
			t.Fatalf("group %d sees %q", g, kv.Value)
		}
		if u := getUser(t, sms[g], "u-2-3"); (u != nil) != (g == 2) {
			t.Fatalf("group %d sees group 2's user: %v", g, u)
		}
		for _, r := range span(t, db, g) {
			if !bytes.HasPrefix(r.k, meta.GroupPrefix(g)) {
				t.Fatalf("group %d span holds %x", g, r.k)
			}
		}
		if applied(t, sms[g]) != idx[g] {
			t.Fatalf("group %d applied %d, want %d", g, applied(t, sms[g]), idx[g])
		}
	}
	// A snapshot of one group carries none of the others.
	img := snapshot(t, sms[2])
	dst := openStore(t, t.TempDir())
	r := fsm.New(fsm.Config{Group: 2, DB: dst})
	if err := r.RecoverFromSnapshot(bytes.NewReader(img), nil); err != nil {
		t.Fatal(err)
	}
	sameSpan(t, "group 2 image", span(t, dst, 2), span(t, db, 2))
	if n := len(span(t, dst, 1)) + len(span(t, dst, 7)); n != 0 {
		t.Fatalf("recovering group 2 wrote %d rows of other groups", n)
	}

	if err := sms[1].Sync(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openStore(t, dir)
	for _, g := range groups {
		got, err := fsm.New(fsm.Config{Group: g, DB: db}).Open(nil)
		if err != nil || got != idx[g] {
			t.Fatalf("group %d reopened at %d (%v), want %d", g, got, err, idx[g])
		}
	}
}

// TestConcurrentReads runs Lookup and SaveSnapshot while Update applies
// (dragonboat allows both); run with -race.
func TestConcurrentReads(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	mustOK(t, apply(t, s, 1, putKV("k", "0")))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Lookup(&meta.GetKV{HashSlot: slotstore.HashSlotOfString("k"), Key: "k"}); err != nil {
				t.Error(err)
				return
			}
			_, _ = s.Lookup(fsm.AppliedQuery{})
			_, _ = s.Lookup(fsm.OwnedQuery{})
		}
	}()
	ctx, err := s.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := span(t, db, 1)
	var img bytes.Buffer
	go func() {
		defer wg.Done()
		if err := s.SaveSnapshot(ctx, &img, nil); err != nil {
			t.Error(err)
		}
	}()
	for i := 2; i <= 100; i++ {
		mustOK(t, apply(t, s, uint64(i), putKV("k", strconv.Itoa(i)), putKV("k"+strconv.Itoa(i), "v")))
	}
	close(stop)
	wg.Wait()
	// The image is the state at PrepareSnapshot, not at SaveSnapshot.
	dst := openStore(t, t.TempDir())
	r := fsm.New(fsm.Config{Group: 1, DB: dst})
	if err := r.RecoverFromSnapshot(&img, nil); err != nil {
		t.Fatal(err)
	}
	sameSpan(t, "image of the prepared state", span(t, dst, 1), want)
	if r.AppliedIndex() != 1 {
		t.Fatalf("recovered applied index %d, want 1", r.AppliedIndex())
	}
}
