package routing_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

func codeOf(err error) slotstore.Code { return slotstore.ErrorCode(err) }

// keyInSlot returns some key whose hash slot is hs.
func keyInSlot(t testing.TB, hs slotstore.HashSlot) []byte {
	t.Helper()
	for i := range 100000 {
		k := fmt.Appendf(nil, "k%d", i)
		if slotstore.HashSlotOf(k) == hs {
			return k
		}
	}
	t.Fatalf("no key found for hash slot %d", hs)
	return nil
}

func TestRouterBeforeTable(t *testing.T) {
	r := routing.NewRouter()
	// Leaders known, but no table: still nothing is routable.
	r.SetLeader(1, 10, 1)
	r.SetConfigEpoch(1, 1)
	s := r.Load()
	if s.Table() != nil || s.Revision() != 0 {
		t.Fatalf("new router has table %v revision %d", s.Table(), s.Revision())
	}
	if _, err := s.Resolve([]byte("user-1")); codeOf(err) != slotstore.CodeRouteNotReady {
		t.Errorf("Resolve before table: err %v, want route_not_ready", err)
	}
	for _, hs := range []slotstore.HashSlot{0, 255} {
		if _, err := s.ResolveSlot(hs); codeOf(err) != slotstore.CodeRouteNotReady {
			t.Errorf("ResolveSlot(%d) before table: err %v, want route_not_ready", hs, err)
		}
	}
	routes, err := s.ResolveBatch([][]byte{[]byte("a"), []byte("b")}, nil)
	if codeOf(err) != slotstore.CodeRouteNotReady || len(routes) != 0 {
		t.Errorf("ResolveBatch before table = %v, %v; want no routes and route_not_ready", routes, err)
	}
	if ok, g := s.Ready(); ok || g != 0 {
		t.Errorf("Ready() before table = %v, %d; want false, 0", ok, g)
	}
	if !errors.Is(err, slotstore.ErrRouteNotReady) || !slotstore.CodeRouteNotReady.Retryable() {
		t.Errorf("route_not_ready must match ErrRouteNotReady and be retryable: %v", err)
	}
}

// TestResolveCases is the data-driven view of the resolve rules: each case
// builds a router from scratch, then resolves one key.
func TestResolveCases(t *testing.T) {
	table3, _ := routing.InitialTable(3) // slots 0..85 → g1, 86..170 → g2, 171..255 → g3
	key := []byte("user-1")              // hash slot 20 → group 1
	const hs = slotstore.HashSlot(20)

	for _, tc := range []struct {
		name     string
		setup    func(r *routing.Router)
		wantCode slotstore.Code // "" = success
		want     slotstore.Route
	}{
		{
			name:     "no table",
			setup:    func(r *routing.Router) { r.SetLeader(1, 7, 2) },
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name:     "table but group unknown",
			setup:    func(r *routing.Router) { r.SetTable(table3); r.SetLeader(2, 7, 2) },
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name:     "group known by config epoch only (leader 0)",
			setup:    func(r *routing.Router) { r.SetTable(table3); r.SetConfigEpoch(1, 4) },
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name:     "explicit leader 0",
			setup:    func(r *routing.Router) { r.SetTable(table3); r.SetLeader(1, 0, 5) },
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name: "leader known",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetConfigEpoch(1, 4)
				r.SetLeader(1, 7, 2)
			},
			want: slotstore.Route{HashSlot: hs, GroupID: 1, LeaderNodeID: 7, LeaderTerm: 2, ConfigEpoch: 4, RouteRevision: 1},
		},
		{
			name: "leader known, config epoch not yet",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(1, 7, 2)
			},
			want: slotstore.Route{HashSlot: hs, GroupID: 1, LeaderNodeID: 7, LeaderTerm: 2, RouteRevision: 1},
		},
		{
			name: "older term ignored",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(1, 7, 5)
				r.SetLeader(1, 8, 4)
				r.SetLeader(1, 0, 3)
			},
			want: slotstore.Route{HashSlot: hs, GroupID: 1, LeaderNodeID: 7, LeaderTerm: 5, RouteRevision: 1},
		},
		{
			name: "newer term wins",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(1, 7, 5)
				r.SetLeader(1, 9, 6)
			},
			want: slotstore.Route{HashSlot: hs, GroupID: 1, LeaderNodeID: 9, LeaderTerm: 6, RouteRevision: 1},
		},
		{
			name: "leader lost at the same term",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(1, 7, 5)
				r.SetLeader(1, 0, 5)
			},
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name: "leader lost at a newer term",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(1, 7, 5)
				r.SetLeader(1, 0, 6)
			},
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name: "group forgotten",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(1, 7, 5)
				r.ForgetGroup(1)
			},
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name: "leader of another group does not help",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				r.SetLeader(2, 7, 5)
				r.SetLeader(3, 7, 5)
			},
			wantCode: slotstore.CodeRouteNotReady,
		},
		{
			name: "newer table moves the slot",
			setup: func(r *routing.Router) {
				r.SetTable(table3)
				gs := table3.Groups()
				gs[hs] = 3
				r.SetTable(mustTable(t, 2, gs))
				r.SetLeader(1, 7, 5)
				r.SetLeader(3, 8, 9)
				r.SetConfigEpoch(3, 11)
			},
			want: slotstore.Route{HashSlot: hs, GroupID: 3, LeaderNodeID: 8, LeaderTerm: 9, ConfigEpoch: 11, RouteRevision: 2},
		},
		{
			name: "older table ignored",
			setup: func(r *routing.Router) {
				gs := table3.Groups()
				gs[hs] = 3
				r.SetTable(mustTable(t, 5, gs))
				r.SetTable(table3) // revision 1 < 5
				r.SetLeader(1, 7, 5)
				r.SetLeader(3, 8, 9)
			},
			want: slotstore.Route{HashSlot: hs, GroupID: 3, LeaderNodeID: 8, LeaderTerm: 9, RouteRevision: 5},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := routing.NewRouter()
			tc.setup(r)
			s := r.Load()
			got, err := s.Resolve(key)
			if tc.wantCode != "" {
				if codeOf(err) != tc.wantCode {
					t.Fatalf("Resolve: err %v (code %q), want code %q", err, codeOf(err), tc.wantCode)
				}
				if routes, berr := s.ResolveBatch([][]byte{key}, nil); codeOf(berr) != tc.wantCode || len(routes) != 0 {
					t.Fatalf("ResolveBatch: %v, %v; want no routes and %q", routes, berr, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Resolve = %+v\nwant      %+v", got, tc.want)
			}
			if got2, err := s.ResolveSlot(hs); err != nil || got2 != tc.want {
				t.Fatalf("ResolveSlot = %+v, %v; want %+v", got2, err, tc.want)
			}
		})
	}
}

func TestResolveSlotOutOfRange(t *testing.T) {
	r := routing.NewRouter()
	tb, _ := routing.InitialTable(1)
	r.SetTable(tb)
	r.SetLeader(1, 1, 1)
	for _, hs := range []slotstore.HashSlot{256, 0xFFFF} {
		if _, err := r.Load().ResolveSlot(hs); codeOf(err) != slotstore.CodeInvalidArgument {
			t.Errorf("ResolveSlot(%d): err %v, want invalid_argument", hs, err)
		}
	}
}

func TestResolveBatch(t *testing.T) {
	r := routing.NewRouter()
	tb, _ := routing.InitialTable(4) // 64 slots each
	r.SetTable(tb)
	for g := slotstore.GroupID(1); g <= 4; g++ {
		r.SetLeader(g, slotstore.NodeID(100+g), uint64(g)*10)
		r.SetConfigEpoch(g, uint64(g))
	}
	var keys [][]byte
	for i := range 500 {
		keys = append(keys, fmt.Appendf(nil, "user-%d", i))
	}
	prefix := []slotstore.Route{{HashSlot: 9}}
	routes, err := r.Load().ResolveBatch(keys, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 1+len(keys) || routes[0] != prefix[0] {
		t.Fatalf("ResolveBatch must append to dst: got %d routes, first %+v", len(routes), routes[0])
	}
	for i, k := range keys {
		hs := slotstore.HashSlot(bitwiseCRC32(k) % 256)
		g := slotstore.GroupID(hs/64 + 1)
		want := slotstore.Route{HashSlot: hs, GroupID: g, LeaderNodeID: slotstore.NodeID(100 + g),
			LeaderTerm: uint64(g) * 10, ConfigEpoch: uint64(g), RouteRevision: 1}
		if routes[1+i] != want {
			t.Fatalf("route of %q = %+v, want %+v", k, routes[1+i], want)
		}
	}

	// One group without a leader: the batch stops at the first key of that
	// group, keeps the routes before it, and reports route_not_ready.
	r.SetLeader(3, 0, 30)
	stop := -1
	for i, k := range keys {
		if slotstore.HashSlotOf(k)/64+1 == 3 {
			stop = i
			break
		}
	}
	routes, err = r.Load().ResolveBatch(keys, nil)
	if codeOf(err) != slotstore.CodeRouteNotReady {
		t.Fatalf("ResolveBatch with a leaderless group: err %v, want route_not_ready", err)
	}
	if len(routes) != stop {
		t.Fatalf("ResolveBatch returned %d routes, want the %d before the first unroutable key", len(routes), stop)
	}
}

func TestReady(t *testing.T) {
	r := routing.NewRouter()
	tb, _ := routing.InitialTable(3)
	r.SetTable(tb)
	if ok, g := r.Load().Ready(); ok || g != 1 {
		t.Fatalf("Ready() with no leaders = %v, %d; want false, 1", ok, g)
	}
	r.SetLeader(1, 1, 1)
	r.SetLeader(3, 3, 1)
	r.SetConfigEpoch(2, 1) // known, but no leader
	if ok, g := r.Load().Ready(); ok || g != 2 {
		t.Fatalf("Ready() without group 2's leader = %v, %d; want false, 2", ok, g)
	}
	r.SetLeader(2, 2, 1)
	if ok, g := r.Load().Ready(); !ok || g != 0 {
		t.Fatalf("Ready() with all leaders = %v, %d; want true, 0", ok, g)
	}
	// Groups outside the table do not matter.
	r.SetLeader(9, 0, 1)
	if ok, _ := r.Load().Ready(); !ok {
		t.Fatal("a leaderless group outside the table made the router not ready")
	}
	// A new table that adds group 4 needs its leader too.
	gs := tb.Groups()
	gs[255] = 4
	r.SetTable(mustTable(t, 2, gs))
	if ok, g := r.Load().Ready(); ok || g != 4 {
		t.Fatalf("Ready() after adding group 4 = %v, %d; want false, 4", ok, g)
	}
	r.SetLeader(2, 0, 2)
	if ok, g := r.Load().Ready(); ok || g != 2 {
		t.Fatalf("Ready() = %v, %d; want the first missing group, 2", ok, g)
	}
}

func TestSetTableNeverGoesBack(t *testing.T) {
	r := routing.NewRouter()
	for _, rev := range []uint64{3, 1, 2, 3, 10, 9, 4, 1} {
		r.SetTable(mustTable(t, rev, rotatedGroups(4, int(rev))))
	}
	s := r.Load()
	if s.Revision() != 10 || s.Table().Groups() != rotatedGroups(4, 10) {
		t.Fatalf("router holds revision %d, want 10 with its own mapping", s.Revision())
	}
}

// TestSnapshotIsImmutable: a snapshot loaded earlier keeps answering from the
// state it was built with, whatever is published afterwards.
func TestSnapshotIsImmutable(t *testing.T) {
	r := routing.NewRouter()
	t1, _ := routing.InitialTable(2)
	r.SetTable(t1)
	r.SetLeader(1, 11, 1)
	r.SetLeader(2, 22, 1)
	r.SetConfigEpoch(1, 5)
	old := r.Load()
	key := keyInSlot(t, 0)
	before, err := old.Resolve(key)
	if err != nil {
		t.Fatal(err)
	}

	r.SetLeader(1, 33, 2)
	r.SetConfigEpoch(1, 6)
	r.ForgetGroup(2)
	r.SetTable(mustTable(t, 2, rotatedGroups(2, 1))) // slot 0 → group 2

	after, err := old.Resolve(key)
	if err != nil || after != before {
		t.Fatalf("old snapshot changed: %+v, %v; was %+v", after, err, before)
	}
	if st, ok := old.Group(2); !ok || st.Leader != 22 {
		t.Fatalf("old snapshot lost group 2: %+v %v", st, ok)
	}
	if old.Revision() != 1 || old.Table() != t1 {
		t.Fatalf("old snapshot revision %d", old.Revision())
	}
	cur := r.Load()
	if _, err := cur.Resolve(key); codeOf(err) != slotstore.CodeRouteNotReady {
		t.Fatalf("current snapshot: slot 0 moved to forgotten group 2, want route_not_ready, got %v", err)
	}
	if st, _ := cur.Group(1); st != (routing.GroupState{Leader: 33, Term: 2, ConfigEpoch: 6}) {
		t.Fatalf("current group 1 = %+v", st)
	}
}

// TestResolveBatchUnderConcurrentPublish: while a writer publishes new tables
// and leaders, every batch resolved on one snapshot is internally consistent:
// one RouteRevision, each slot's group as that revision's table says, one
// leader/term per group. Run with -race.
func TestResolveBatchUnderConcurrentPublish(t *testing.T) {
	const (
		groups    = 8
		revisions = 300
		readers   = 4
	)
	expectGroup := func(hs slotstore.HashSlot, rev uint64) slotstore.GroupID {
		return slotstore.GroupID((int(hs)+int(rev))%groups + 1)
	}
	r := routing.NewRouter()
	r.SetTable(mustTable(t, 1, rotatedGroups(groups, 1)))
	for g := slotstore.GroupID(1); g <= groups; g++ {
		r.SetLeader(g, slotstore.NodeID(g), 1)
	}
	var keys [][]byte
	for i := range 1024 {
		keys = append(keys, fmt.Appendf(nil, "channel:%d", i))
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []slotstore.Route
			var lastRev uint64
			for iter := 0; ; iter++ {
				select {
				case <-done:
					if iter > 0 {
						return
					}
				default:
				}
				s := r.Load()
				rev := s.Revision()
				if rev < lastRev {
					errs <- fmt.Errorf("revision went back from %d to %d", lastRev, rev)
					return
				}
				lastRev = rev
				var err error
				dst, err = s.ResolveBatch(keys, dst[:0])
				if err != nil {
					errs <- err
					return
				}
				leaders := map[slotstore.GroupID]slotstore.Route{}
				for i, rt := range dst {
					if rt.RouteRevision != rev {
						errs <- fmt.Errorf("route %d has revision %d, snapshot %d", i, rt.RouteRevision, rev)
						return
					}
					if want := expectGroup(rt.HashSlot, rev); rt.GroupID != want {
						errs <- fmt.Errorf("slot %d → group %d at revision %d, want %d", rt.HashSlot, rt.GroupID, rev, want)
						return
					}
					if prev, ok := leaders[rt.GroupID]; ok && (prev.LeaderNodeID != rt.LeaderNodeID || prev.LeaderTerm != rt.LeaderTerm) {
						errs <- fmt.Errorf("group %d has two leaders in one batch: %+v and %+v", rt.GroupID, prev, rt)
						return
					}
					leaders[rt.GroupID] = rt
				}
			}
		}()
	}

	for rev := uint64(2); rev <= revisions; rev++ {
		r.SetTable(mustTable(t, rev, rotatedGroups(groups, int(rev))))
		g := slotstore.GroupID(rev%groups + 1)
		r.SetLeader(g, slotstore.NodeID(rev), rev)
		r.SetTable(mustTable(t, rev-1, rotatedGroups(groups, int(rev-1)))) // stale: ignored
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := r.Load().Revision(); got != revisions {
		t.Fatalf("final revision %d, want %d", got, revisions)
	}
}

func TestLeaderChangeIsCancelledByTheNextChangeOnly(t *testing.T) {
	r := routing.NewRouter()
	r.SetLeader(1, 2, 5)
	c := r.LeaderChange(1)
	other := r.LeaderChange(2)
	if c != r.LeaderChange(1) {
		t.Fatal("callers before one change share one context")
	}
	r.SetLeader(1, 2, 5) // no change
	r.SetLeader(1, 3, 4) // older term: ignored
	select {
	case <-c.Done():
		t.Fatal("cancelled without a change")
	default:
	}
	r.SetLeader(1, 0, 6) // an election at a newer term is a change
	select {
	case <-c.Done():
	default:
		t.Fatal("not cancelled by the change")
	}
	if st, _ := r.Load().Group(1); st.Leader != 0 || st.Term != 6 {
		t.Fatalf("the snapshot must be published when the change is signalled: %+v", st)
	}
	next := r.LeaderChange(1)
	if next.Err() != nil {
		t.Fatal("a new context after the change")
	}
	if other.Err() != nil {
		t.Fatal("another group's context was cancelled")
	}
	r.ForgetGroup(1)
	if next.Err() == nil {
		t.Fatal("forgetting the group is a change")
	}
}

// TestRouterChanged: the channel Changed hands out is closed by the next
// published snapshot, and only by one that changes something.
func TestRouterChanged(t *testing.T) {
	r := routing.NewRouter()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	tbl, err := routing.InitialTable(2)
	if err != nil {
		t.Fatal(err)
	}
	ch := r.Changed()
	r.SetTable(tbl)
	if !closed(ch) {
		t.Fatal("a new table did not close Changed")
	}
	ch = r.Changed()
	r.SetTable(tbl) // the same table: nothing published
	if closed(ch) {
		t.Fatal("an unchanged table closed Changed")
	}
	r.SetLeader(1, 2, 5)
	if !closed(ch) {
		t.Fatal("a new leader did not close Changed")
	}
	if st, _ := r.Load().Group(1); st.Leader != 2 {
		t.Fatal("the change is not in the snapshot")
	}
}
