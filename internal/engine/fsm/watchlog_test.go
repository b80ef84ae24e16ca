package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// published collects what a state machine hands to Config.Changes, and checks
// that every record was committed before it was handed on.
type published struct {
	mu   sync.Mutex
	sm   *fsm.StateMachine
	recs []watch.Record
	errs []string
}

func (p *published) Publish(recs []watch.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range recs {
		stored, err := p.sm.ReadChanges(context.Background(), r.Slot, r.Seq-1, 1)
		if err != nil || len(stored) != 1 || stored[0].Seq != r.Seq {
			p.errs = append(p.errs, fmt.Sprintf("slot %d seq %d published before it was committed (%v)", r.Slot, r.Seq, err))
		}
	}
	p.recs = append(p.recs, recs...)
}

func (p *published) take(t *testing.T) []watch.Record {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errs {
		t.Error(e)
	}
	out := p.recs
	p.recs, p.errs = nil, nil
	return out
}

func watchedSM(t *testing.T, db *store.DB, g slotstore.GroupID, genesis []slotstore.HashSlot, mod ...func(*fsm.Config)) (*fsm.StateMachine, *published) {
	t.Helper()
	p := &published{}
	s := newSM(t, db, g, genesis, append([]func(*fsm.Config){func(c *fsm.Config) { c.Changes = p }}, mod...)...)
	p.sm = s
	return s, p
}

func readAll(t *testing.T, s *fsm.StateMachine, hs slotstore.HashSlot, after uint64) []watch.Record {
	t.Helper()
	recs, err := s.ReadChanges(context.Background(), hs, after, 1000)
	if err != nil {
		t.Fatalf("read slot %d after %d: %v", hs, after, err)
	}
	return recs
}

type wantRec struct {
	seq, batch  uint64
	kind        watch.Kind
	table       meta.Table
	value, prev bool
}

func checkRecs(t *testing.T, what string, got []watch.Record, want []wantRec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d: %+v", what, len(got), len(want), got)
	}
	for i, w := range want {
		r := got[i]
		if r.Seq != w.seq || r.Batch != w.batch || r.Kind != w.kind || r.Table != w.table || (r.Value != nil) != w.value || (r.Prev != nil) != w.prev {
			t.Errorf("%s: record %d = seq %d batch %d %v table %d value %t prev %t, want %+v", what, i, r.Seq, r.Batch, r.Kind, r.Table, r.Value != nil, r.Prev != nil, w)
		}
	}
}

// TestChangesAreNumberedPerSlot: every change of a watched row gets its
// slot's next sequence, a channel's with the value it replaced; a command's changes
// share a batch; a failed or empty change, index rows and idempotency
// records are not numbered; what is published was committed first, and
// reads back the same.
func TestChangesAreNumberedPerSlot(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s, pub := watchedSM(t, db, 1, allSlots())
	k := "watched-key"
	hs := slotstore.HashSlotOfString(k)
	mustOK(t, apply(t, s, 1, putKV(k, "v1")))
	mustOK(t, apply(t, s, 2, withIdem(putKV(k, "v2"), "idem-1", 1000)))
	wantCode(t, apply(t, s, 3, delKV("missing-"+k, meta.Cond{}))[0], slotstore.CodeNotFound)
	mustOK(t, apply(t, s, 4, delKV(k, meta.Cond{})))
	want := []wantRec{
		{seq: 1, batch: 1, kind: watch.Put, table: meta.TableKV, value: true},
		{seq: 2, batch: 2, kind: watch.Put, table: meta.TableKV, value: true}, // a business key keeps no previous value
		{seq: 3, batch: 3, kind: watch.Delete, table: meta.TableKV},
	}
	checkRecs(t, "published", pub.take(t), want)
	got := readAll(t, s, hs, 0)
	checkRecs(t, "stored", got, want)
	if string(got[0].Key) != k {
		t.Fatalf("record key %q, want the primary key %q", got[0].Key, k)
	}
	if head, err := s.ChangeHead(hs); err != nil || head != 3 {
		t.Fatalf("head %d, %v; want 3", head, err)
	}
	if recs := readAll(t, s, hs, 3); len(recs) != 0 {
		t.Fatalf("read past the head: %+v", recs)
	}

	// One command, many rows: one batch.
	ch := "watched-channel"
	cs := slotstore.HashSlotOfString(ch)
	uids := []string{"a", "b", "c"}
	mustOK(t, apply(t, s, 5, &meta.CreateChannel{Header: hdr(ch, "", 100), Channel: chInfo(1, ch)},
		&meta.AddChannelMembers{Header: hdr(ch, "", 101), ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: ch, UIDs: uids}},
		&meta.AddChannelMembers{Header: hdr(ch, "", 102), ChannelMembers: meta.ChannelMembers{List: meta.ListDenylist, ChannelType: 1, ChannelID: ch, UIDs: uids[:1]}}))
	base := uint64(0)
	if cs == hs {
		base = 3
	}
	// A list change also rewrites the channel's row (its list counters).
	checkRecs(t, "channel", readAll(t, s, cs, base), []wantRec{
		{seq: base + 1, batch: base + 1, kind: watch.Put, table: meta.TableChannel, value: true},
		{seq: base + 2, batch: base + 2, kind: watch.Put, table: meta.TableSubscriber, value: true},
		{seq: base + 3, batch: base + 2, kind: watch.Put, table: meta.TableSubscriber, value: true},
		{seq: base + 4, batch: base + 2, kind: watch.Put, table: meta.TableSubscriber, value: true},
		{seq: base + 5, batch: base + 2, kind: watch.Put, table: meta.TableChannel, value: true, prev: true},
		{seq: base + 6, batch: base + 6, kind: watch.Put, table: meta.TableDenylist, value: true},
		{seq: base + 7, batch: base + 6, kind: watch.Put, table: meta.TableChannel, value: true, prev: true},
	})
	pub.take(t)
	if recs := readAll(t, s, cs, base+6); len(recs) != 1 {
		t.Fatalf("the channel's last record: %+v", recs)
	} else if prev, err := meta.DecodeChannel(recs[0].Prev); err != nil || prev.Revision == 0 {
		t.Fatalf("the channel's previous value: %+v, %v", prev, err)
	} else if cur, err := meta.DecodeChannel(recs[0].Value); err != nil || cur.Revision <= prev.Revision {
		t.Fatalf("the channel's value %+v does not follow its previous one %+v (%v)", cur, prev, err)
	}

	// A deleted channel: its row, and one clear per list that had rows.
	mustOK(t, apply(t, s, 6, &meta.DeleteChannel{Header: hdr(ch, "", 103), ChannelType: 1, ChannelID: ch}))
	got = pub.take(t)
	checkRecs(t, "delete channel", got, []wantRec{
		{seq: base + 8, batch: base + 8, kind: watch.Delete, table: meta.TableChannel, prev: true},
		{seq: base + 9, batch: base + 8, kind: watch.Clear, table: meta.TableSubscriber},
		{seq: base + 10, batch: base + 8, kind: watch.Clear, table: meta.TableDenylist},
	})
	if want := meta.ChannelListPrefix(1, cs, meta.TableSubscriber, 1, ch)[8:]; string(got[1].Key) != string(want) {
		t.Fatalf("clear key %x, want the channel's list prefix %x", got[1].Key, want)
	}
	// Index rows, the outbox and idempotency records are in the store but not in the log.
	for _, tb := range []meta.Table{meta.TableDedup, meta.TableOutbox, meta.TableMembershipActivity, meta.TablePluginIndex} {
		if tb.Watched() {
			t.Errorf("table %d is watched", tb)
		}
	}
	if countTable(t, db, 1, meta.TableDedup) == 0 || countTable(t, db, 1, meta.TableOutbox) == 0 {
		t.Fatal("the workload wrote no idempotency or outbox rows: the test proves nothing about them")
	}
}

// TestChangeRetention: a slot keeps at most WatchRecords records, and none
// older than WatchAge by the commands' time; older positions are
// compacted, the rest read on.
func TestChangeRetention(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s, _ := watchedSM(t, db, 1, allSlots(), func(c *fsm.Config) { c.WatchRecords, c.WatchAge = 5, time.Minute })
	k := "retained"
	hs := slotstore.HashSlotOfString(k)
	for i := range 20 {
		mustOK(t, apply(t, s, uint64(i+1), putKV(k, fmt.Sprint(i))))
	}
	if _, err := s.ReadChanges(context.Background(), hs, 0, 10); !errors.Is(err, watch.ErrCompacted) {
		t.Fatalf("read from 0 after 20 changes kept 5: %v, want compacted", err)
	}
	if _, err := s.ReadChanges(context.Background(), hs, 14, 10); !errors.Is(err, watch.ErrCompacted) {
		t.Fatalf("read after 14: %v, want compacted", err)
	}
	if got := readAll(t, s, hs, 15); len(got) != 5 || got[0].Seq != 16 || got[4].Seq != 20 {
		t.Fatalf("after 15: %+v, want 16..20", got)
	}
	if n := countTable(t, db, 1, meta.TableWatch); n != 5 {
		t.Fatalf("%d records stored, want 5", n)
	}
	// Age: changes a minute and a half later drop every older record (two
	// per new record) until the oldest is within the minute.
	idx := uint64(21)
	for i := range 3 {
		c := putKV(k, fmt.Sprint("late", i))
		c.TimeMs = 1000 + 90_000
		mustOK(t, apply(t, s, idx, c))
		idx++
	}
	if _, err := s.ReadChanges(context.Background(), hs, 19, 10); !errors.Is(err, watch.ErrCompacted) {
		t.Fatalf("read after 19 once aged: %v, want compacted", err)
	}
	if got := readAll(t, s, hs, 20); len(got) != 3 || got[0].Seq != 21 {
		t.Fatalf("after aging: %+v, want the late 21..23 kept", got)
	}
	if n := countTable(t, db, 1, meta.TableWatch); n != 3 {
		t.Fatalf("%d records stored after aging, want 3", n)
	}
}

// TestChangesTravelWithTheSlot: a migrated slot's log is copied as it is
// (not numbered again) and the target continues its sequence; a live
// move's changes — a channel deleted with its lists among them — reach the
// target whole; a group that does not own a slot serves none of its log.
func TestChangesTravelWithTheSlot(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	ch := "travelling"
	hs := slotstore.HashSlotOfString(ch)
	src, _ := watchedSM(t, db, 1, []slotstore.HashSlot{hs})
	dst, dstPub := watchedSM(t, db, 2, nil)
	h := meta.Header{HashSlot: hs, TimeMs: 100}
	var si, di uint64
	ok := func(s *fsm.StateMachine, idx *uint64, c meta.Command) {
		t.Helper()
		*idx++
		mustOK(t, apply(t, s, *idx, c))
	}
	ok(src, &si, &meta.CreateChannel{Header: h, Channel: chInfo(1, ch)})
	ok(src, &si, &meta.AddChannelMembers{Header: h, ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: ch, UIDs: []string{"u1", "u2"}}})
	ok(src, &si, &meta.TrackSlot{Header: h})
	v, err := src.Lookup(&meta.ExportSlot{HashSlot: hs, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ok(dst, &di, &meta.ImportRows{Header: h, Rows: v.(*meta.SlotChunk).Rows})
	// While the copy is on its way: the channel goes, lists and all, and comes back empty.
	ok(src, &si, &meta.DeleteChannel{Header: h, ChannelType: 1, ChannelID: ch})
	ok(src, &si, &meta.CreateChannel{Header: h, Channel: chInfo(1, ch)})
	ok(src, &si, &meta.FenceSlot{Header: h})
	for idx, seq := uint64(0), uint32(0); ; {
		v, err := src.Lookup(&meta.ExportChanges{HashSlot: hs, AfterIndex: idx, AfterSeq: seq, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		c := v.(*meta.ChangeChunk)
		ok(dst, &di, &meta.ImportChanges{Header: h, Rows: c.Rows, Deleted: c.Deleted})
		if idx, seq = c.NextIndex, c.NextSeq; c.Done {
			break
		}
	}
	if _, err := dst.ReadChanges(context.Background(), hs, 0, 10); !errors.Is(err, watch.ErrUnavailable) {
		t.Fatalf("the target served the log of a slot it does not own yet: %v", err)
	}
	ok(dst, &di, &meta.AcquireSlot{Header: h})
	want := readAll(t, src, hs, 0)
	ok(src, &si, &meta.ReleaseSlot{Header: h})
	if recs := dstPub.take(t); len(recs) != 0 {
		t.Fatalf("the import was numbered again: %+v", recs)
	}
	got := readAll(t, dst, hs, 0)
	if len(got) != len(want) || len(got) != 7 {
		t.Fatalf("the target's log has %d records, the source had %d, want 7", len(got), len(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].Kind != want[i].Kind || !slices.Equal(got[i].Key, want[i].Key) {
			t.Fatalf("record %d: %+v on the target, %+v at the source", i, got[i], want[i])
		}
	}
	if n := countTable(t, db, 2, meta.TableSubscriber); n != 0 {
		t.Fatalf("the target keeps %d subscribers of the channel deleted during the move", n)
	}
	if _, err := src.ChangeHead(hs); !errors.Is(err, watch.ErrUnavailable) {
		t.Fatalf("the source still serves the slot's head: %v", err)
	}
	ok(dst, &di, &meta.AddChannelMembers{Header: h, ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: ch, UIDs: []string{"u3"}}})
	if recs := dstPub.take(t); len(recs) != 2 || recs[0].Seq != 8 {
		t.Fatalf("the target's first change: %+v, want seq 8 (the subscriber, then the channel's counters)", recs)
	}
}

// TestFenceKeepsTheHead: a slot fenced in the same Update as its last
// change stores the head that change moved (the target of the move numbers
// on from it: a head left one behind made it give a sequence twice).
func TestFenceKeepsTheHead(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	k := "fenced-key"
	hs := slotstore.HashSlotOfString(k)
	s, _ := watchedSM(t, db, 1, []slotstore.HashSlot{hs})
	mustOK(t, apply(t, s, 1, putKV(k, "a")))
	mustOK(t, apply(t, s, 2, putKV(k, "b"), &meta.FenceSlot{Header: meta.Header{HashSlot: hs}}))
	if head, err := s.ChangeHead(hs); err != nil || head != 2 {
		t.Fatalf("the stored head after a change and a fence in one Update: %d, %v; want 2", head, err)
	}
	mustOK(t, apply(t, s, 3, &meta.UnfenceSlot{Header: meta.Header{HashSlot: hs}}))
	mustOK(t, apply(t, s, 4, putKV(k, "c")))
	if recs := readAll(t, s, hs, 0); len(recs) != 3 || recs[2].Seq != 3 {
		t.Fatalf("after unfencing: %+v, want seqs 1..3", recs)
	}
}

// TestHeadCacheYieldsToRowsReplacedInTheSameUpdate: a slot released and
// taken back with another group's rows within one Update numbers on from
// the imported head, not from the head it kept from before.
func TestHeadCacheYieldsToRowsReplacedInTheSameUpdate(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	k := "cached-key"
	hs := slotstore.HashSlotOfString(k)
	h := meta.Header{HashSlot: hs}
	s, _ := watchedSM(t, db, 1, []slotstore.HashSlot{hs})
	other, _ := watchedSM(t, db, 2, []slotstore.HashSlot{hs})
	mustOK(t, apply(t, s, 1, putKV(k, "mine"))) // group 1 keeps head 1
	for i := range 5 {
		mustOK(t, apply(t, other, uint64(i+1), putKV(k, fmt.Sprint("theirs", i))))
	}
	v, err := other.Lookup(&meta.ExportSlot{HashSlot: hs, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, apply(t, s, 2, &meta.FenceSlot{Header: h}, &meta.ReleaseSlot{Header: h},
		&meta.ImportRows{Header: h, Rows: v.(*meta.SlotChunk).Rows}, &meta.AcquireSlot{Header: h}, putKV(k, "after")))
	recs := readAll(t, s, hs, 0)
	if len(recs) != 6 || recs[5].Seq != 6 {
		t.Fatalf("after taking the slot back with 5 imported changes: %d records, last %+v; want seq 6", len(recs), recs[len(recs)-1])
	}
}

// TestChangeLogBeforeOpen: the change feed's log asks every local replica
// whether it owns a slot, a starting one too (the chaos watch found a 500:
// Owns of a state machine not yet opened dereferenced its nil slot set).
func TestChangeLogBeforeOpen(t *testing.T) {
	s := fsm.New(fsm.Config{Group: 1, DB: openStore(t, t.TempDir()), Genesis: []slotstore.HashSlot{3}})
	if owned, fenced := s.Owns(3); owned || fenced {
		t.Fatalf("Owns(3) before Open = %v, %v; want false, false", owned, fenced)
	}
	if _, err := s.ChangeHead(3); !errors.Is(err, watch.ErrUnavailable) {
		t.Fatalf("ChangeHead before Open: %v, want ErrUnavailable", err)
	}
	if _, err := s.ReadChanges(context.Background(), 3, 0, 10); !errors.Is(err, watch.ErrUnavailable) {
		t.Fatalf("ReadChanges before Open: %v, want ErrUnavailable", err)
	}
}
