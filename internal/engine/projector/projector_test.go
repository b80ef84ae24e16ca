package projector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// fakeNode is a node whose groups' outboxes are lists in memory: a
// projection is recorded, an acknowledgement removes its record.
type fakeNode struct {
	mu        sync.Mutex
	groups    []Group
	outbox    map[slotstore.GroupID][]meta.OutboxEntry
	projected []string                      // "uid channel vN +/-", in the order proposed
	acked     []uint64                      // seqs
	fail      map[string]error              // uid → the error its projection gets
	scanErr   map[slotstore.GroupID]error   // group → the error its scan gets
	block     chan struct{}                 // when set, every proposal waits for it (or ctx)
	inFlight  int                           // proposals under way
	maxFlight int                           // the most at once
	backlog   map[slotstore.GroupID][]int   // Backlog calls
	ackBefore map[uint64]map[string]bool    // seq → its uids projected when it was acknowledged
	recordOf  map[uint64]*meta.OutboxRecord // seq → record
	scans     map[slotstore.GroupID]int     // ScanOutbox calls
}

func newFakeNode() *fakeNode {
	return &fakeNode{outbox: map[slotstore.GroupID][]meta.OutboxEntry{}, fail: map[string]error{},
		scanErr: map[slotstore.GroupID]error{}, backlog: map[slotstore.GroupID][]int{},
		ackBefore: map[uint64]map[string]bool{}, recordOf: map[uint64]*meta.OutboxRecord{}, scans: map[slotstore.GroupID]int{}}
}

// add puts a record in g's outbox at seq.
func (f *fakeNode) add(g slotstore.GroupID, seq uint64, channel string, uids ...string) {
	r := &meta.OutboxRecord{ChannelType: 2, ChannelID: channel, Version: seq * 10, Add: true, UIDs: uids}
	f.outbox[g] = append(f.outbox[g], meta.OutboxEntry{HashSlot: slotstore.HashSlotOfString(channel), Seq: seq, Record: r})
	f.recordOf[seq] = r
}

func (f *fakeNode) Groups() []Group { return f.groups }

func (f *fakeNode) ScanOutbox(_ context.Context, g slotstore.GroupID, q *meta.ScanOutbox) (*meta.OutboxPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scans[g]++
	if err := f.scanErr[g]; err != nil {
		return nil, err
	}
	es := f.outbox[g]
	if len(es) > q.Limit {
		es = es[:q.Limit]
	}
	return &meta.OutboxPage{Entries: slices.Clone(es)}, nil
}

func (f *fakeNode) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	f.mu.Lock()
	f.inFlight++
	f.maxFlight = max(f.maxFlight, f.inFlight)
	block := f.block
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return meta.Result{}, slotstore.Route{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch c := cmd.(type) {
	case *meta.ProjectMembership:
		if err := f.fail[c.UID]; err != nil {
			return meta.Result{}, slotstore.Route{}, err
		}
		sign := map[bool]string{true: "+", false: "-"}[c.Add]
		f.projected = append(f.projected, fmt.Sprintf("%s %s v%d %s", c.UID, c.ChannelID, c.Version, sign))
	case *meta.AckOutbox:
		done := map[string]bool{}
		for _, p := range f.projected {
			done[p] = true
		}
		seen := map[string]bool{}
		for _, uid := range f.recordOf[c.Seq].UIDs {
			seen[uid] = done[fmt.Sprintf("%s %s v%d +", uid, c.ChannelID, c.Seq*10)]
		}
		f.ackBefore[c.Seq] = seen
		f.acked = append(f.acked, c.Seq)
		for g, es := range f.outbox {
			f.outbox[g] = slices.DeleteFunc(es, func(e meta.OutboxEntry) bool { return e.Seq == c.Seq })
		}
	default:
		return meta.Result{}, slotstore.Route{}, fmt.Errorf("unexpected command %T", cmd)
	}
	return meta.Result{}, slotstore.Route{}, nil
}

func newProjector(f *fakeNode) *Projector {
	return New(Config{Node: f, Interval: -1, RoundTimeout: 5 * time.Second,
		Backlog: func(g slotstore.GroupID, n int) { f.backlog[g] = append(f.backlog[g], n) }})
}

// TestProjectsLedGroupsAndAcknowledgesAfterTheUsers: a round projects every
// record of the groups the node leads onto each of its users, and
// acknowledges a record only once all its users are projected; a group the
// node does not lead is left alone and its backlog reported as -1.
func TestProjectsLedGroupsAndAcknowledgesAfterTheUsers(t *testing.T) {
	f := newFakeNode()
	f.groups = []Group{{ID: 1, Led: true, Slots: []slotstore.HashSlot{0, 127}}, {ID: 2}}
	f.add(1, 1, "room", "alice", "bob")
	f.add(1, 2, "hall", "carol")
	f.add(2, 3, "attic", "dave") // not led here
	done, err := newProjector(f).Once(context.Background())
	if err != nil || done != 2 {
		t.Fatalf("round: %d acknowledged, %v; want 2, nil", done, err)
	}
	slices.Sort(f.projected)
	if want := []string{"alice room v10 +", "bob room v10 +", "carol hall v20 +"}; !slices.Equal(f.projected, want) {
		t.Fatalf("projected %q, want %q", f.projected, want)
	}
	for seq, users := range f.ackBefore {
		for uid, ok := range users {
			if !ok {
				t.Fatalf("record %d acknowledged before %s was projected", seq, uid)
			}
		}
	}
	if len(f.outbox[1]) != 0 || len(f.outbox[2]) != 1 {
		t.Fatalf("outboxes after the round: %v", f.outbox)
	}
	if !slices.Equal(f.backlog[1], []int{2}) || !slices.Equal(f.backlog[2], []int{-1}) {
		t.Fatalf("backlogs reported: %v", f.backlog)
	}
}

// TestFailedProjectionKeepsItsRecord: a record one of whose users cannot be
// projected is not acknowledged — the error is the round's, the other
// records go on — and the next round projects it again.
func TestFailedProjectionKeepsItsRecord(t *testing.T) {
	f := newFakeNode()
	f.groups = []Group{{ID: 1, Led: true, Slots: []slotstore.HashSlot{0}}}
	f.add(1, 1, "room", "alice", "bob")
	f.add(1, 2, "hall", "carol")
	busy := &slotstore.Error{Code: slotstore.CodeBusy, Message: "queue full"}
	f.fail["bob"] = busy
	p := newProjector(f)
	done, err := p.Once(context.Background())
	if done != 1 || !errors.Is(err, busy) {
		t.Fatalf("round with bob failing: %d acknowledged, %v; want 1, busy", done, err)
	}
	if !slices.Equal(f.acked, []uint64{2}) || len(f.outbox[1]) != 1 || f.outbox[1][0].Seq != 1 {
		t.Fatalf("acknowledged %v, outbox %v: want only record 2 gone", f.acked, f.outbox[1])
	}
	delete(f.fail, "bob")
	if done, err := p.Once(context.Background()); done != 1 || err != nil {
		t.Fatalf("next round: %d acknowledged, %v; want 1, nil", done, err)
	}
	if len(f.outbox[1]) != 0 {
		t.Fatalf("outbox after the retry: %v", f.outbox[1])
	}
}

// TestScanErrorOfOneGroupLeavesTheOthers: a group whose outbox cannot be
// read gives the round its error; the other led groups are projected.
func TestScanErrorOfOneGroupLeavesTheOthers(t *testing.T) {
	f := newFakeNode()
	f.groups = []Group{{ID: 1, Led: true, Slots: []slotstore.HashSlot{0}}, {ID: 2, Led: true, Slots: []slotstore.HashSlot{1}}}
	f.add(1, 1, "room", "alice")
	f.add(2, 2, "hall", "bob")
	notLeader := &slotstore.Error{Code: slotstore.CodeNotLeader, Message: "moved"}
	f.scanErr[1] = notLeader
	done, err := newProjector(f).Once(context.Background())
	if done != 1 || !errors.Is(err, notLeader) || !slices.Equal(f.acked, []uint64{2}) {
		t.Fatalf("round: %d acknowledged (%v), %v; want record 2 and the scan's error", done, f.acked, err)
	}
}

// TestFullPageAsksForMore: a page of projectBatch records says there may be
// more (Run starts the next round at once); a shorter one does not.
func TestFullPageAsksForMore(t *testing.T) {
	f := newFakeNode()
	f.groups = []Group{{ID: 1, Led: true, Slots: []slotstore.HashSlot{0}}}
	for i := 1; i <= projectBatch+1; i++ {
		f.add(1, uint64(i), fmt.Sprintf("c%d", i), "u")
	}
	p := newProjector(f)
	done, more, err := p.round(context.Background())
	if err != nil || done != projectBatch || !more {
		t.Fatalf("full page: %d acknowledged, more %v, %v", done, more, err)
	}
	done, more, err = p.round(context.Background())
	if err != nil || done != 1 || more {
		t.Fatalf("the rest: %d acknowledged, more %v, %v", done, more, err)
	}
}

// TestProposalsInFlightAreBounded: however many users a page names, at
// most projectParallel proposals are under way at once; a round cut short
// by its deadline returns its error only after every proposal it started
// has returned.
func TestProposalsInFlightAreBounded(t *testing.T) {
	f := newFakeNode()
	f.groups = []Group{{ID: 1, Led: true, Slots: []slotstore.HashSlot{0}}}
	var uids []string
	for i := range 3 * projectParallel {
		uids = append(uids, fmt.Sprintf("u%d", i))
	}
	f.add(1, 1, "big", uids...)
	f.block = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		done int
		err  error
	}
	out := make(chan outcome, 1)
	go func() {
		done, err := newProjector(f).Once(ctx)
		out <- outcome{done, err}
	}()
	// Wait until the bound is reached, then check it holds.
	for {
		f.mu.Lock()
		n := f.inFlight
		f.mu.Unlock()
		if n >= projectParallel {
			break
		}
		select {
		case o := <-out:
			t.Fatalf("round ended early: %+v", o)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	o := <-out
	if !errors.Is(o.err, context.Canceled) || o.done != 0 {
		t.Fatalf("cancelled round: %+v", o)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxFlight != projectParallel || f.inFlight != 0 {
		t.Fatalf("in flight: at most %d (want %d), %d left after the round", f.maxFlight, projectParallel, f.inFlight)
	}
}

// TestEmptyOutboxIsNotScannedAgainUntilApplied: a led group whose outbox a
// scan found empty at an applied index is not scanned again while the
// index stays (idle groups cost nothing a round) — also at index 0, a group
// that never applied a command; a group whose index moved, whose last scan
// found records, or whose state machine is not open is.
func TestEmptyOutboxIsNotScannedAgainUntilApplied(t *testing.T) {
	f := newFakeNode()
	slots := []slotstore.HashSlot{0, 255}
	f.groups = []Group{{ID: 1, Led: true, Slots: slots, Applied: 7, Open: true}, {ID: 2, Led: true, Slots: slots, Applied: 9, Open: true},
		{ID: 3, Led: true, Slots: slots}, {ID: 4, Led: true, Slots: slots, Open: true}}
	f.add(2, 1, "room", "u1")
	f.fail["u1"] = errors.New("not now")
	p := newProjector(f)
	for range 3 {
		_, _ = p.Once(context.Background())
	}
	if f.scans[1] != 1 || f.scans[2] != 3 || f.scans[3] != 3 || f.scans[4] != 1 {
		t.Fatalf("scans after three rounds: %v (want g1 once: empty at 7; g4 once: empty at 0; g2, with a record, and g3, not open, every round)", f.scans)
	}
	// A hash slot migrated in: the routing table changed, not the index
	// (the copied rows may hold outbox records).
	f.groups[3].Slots = []slotstore.HashSlot{0, 7, 255}
	_, _ = p.Once(context.Background())
	if f.scans[4] != 2 {
		t.Fatalf("g4 after a slot joined it: %d scans, want 2", f.scans[4])
	}
	f.groups[0].Applied = 8 // something applied: the outbox may have a record now
	f.add(1, 2, "hall", "u2")
	if _, err := p.Once(context.Background()); err == nil || f.scans[1] != 2 || !slices.Contains(f.projected, "u2 hall v20 +") {
		t.Fatalf("after g1's index moved: scans %v, projected %v, err %v", f.scans, f.projected, err)
	}
}
