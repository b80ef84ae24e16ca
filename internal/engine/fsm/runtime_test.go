package fsm_test

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func runtimeOf(id string, ce, le, leader uint64, lease int64) meta.ChannelRuntime {
	return meta.ChannelRuntime{ChannelType: 2, ChannelID: id, ChannelEpoch: ce, LeaderEpoch: le, Leader: leader,
		Replicas: []uint64{1, 2, 3}, ISR: []uint64{1, 2, 3}, MinISR: 2, Status: meta.RuntimeActive, LeaseUntilMs: lease}
}

func getRuntime(tb testing.TB, s *fsm.StateMachine, id string) *meta.ChannelRuntime {
	tb.Helper()
	v, err := s.Lookup(&meta.GetRuntime{HashSlot: slotstore.HashSlotOfString(id), ChanRef: meta.ChanRef{ChannelType: 2, ChannelID: id}})
	if err != nil {
		tb.Fatal(err)
	}
	return v.(*meta.ChannelRuntime)
}

func TestRuntimeCreateAndDelete(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	rt := runtimeOf("ch", 1, 1, 1, 100)
	rt.WriteFence = meta.WriteFence{Token: "t", Version: 2, Reason: "r", UntilMs: 5}
	r := mustOK(t, apply(t, s, 1, &meta.CreateRuntime{Header: hdr("ch", "", 10), Runtime: rt}))[0]
	got := getRuntime(t, s, "ch")
	rt.CreatedAtMs, rt.UpdatedAtMs, rt.Revision = 10, 10, r.Revision
	if got.Leader != 1 || got.WriteFence != rt.WriteFence || got.CreatedAtMs != 10 || got.Revision != r.Revision {
		t.Fatalf("created %+v", got)
	}
	unchanged(t, db, 1, "a second create", func() {
		wantCode(t, apply(t, s, 2, &meta.CreateRuntime{Header: hdr("ch", "", 20), Runtime: runtimeOf("ch", 9, 9, 2, 0)})[0], slotstore.CodeConflict)
	})
	unchanged(t, db, 1, "invalid runtime meta", func() {
		bad := runtimeOf("ch2", 1, 1, 7, 0) // leader not a replica
		wantCode(t, apply(t, s, 3, &meta.CreateRuntime{Header: hdr("ch2", "", 20), Runtime: bad})[0], slotstore.CodeInvalidArgument)
		wantCode(t, apply(t, s, 4, &meta.PutRuntime{Header: hdr("ch2", "", 20), Runtime: bad})[0], slotstore.CodeInvalidArgument)
	})
	mustOK(t, apply(t, s, 5, &meta.DeleteRuntime{Header: hdr("ch", "", 30), ChanRef: meta.ChanRef{ChannelType: 2, ChannelID: "ch"}}))
	if getRuntime(t, s, "ch") != nil {
		t.Fatal("deleted runtime reads")
	}
	wantCode(t, apply(t, s, 6, &meta.DeleteRuntime{Header: hdr("ch", "", 30), ChanRef: meta.ChanRef{ChannelType: 2, ChannelID: "ch"}})[0], slotstore.CodeNotFound)
	// Independent of the channel row: none was needed, none was written.
	if countTable(t, db, 1, meta.TableChannel) != 0 {
		t.Fatal("runtime meta wrote a channel row")
	}
}

// TestRuntimeFencing is the FSM side of the fencing table (the HTTP side
// is in internal/e2e): from stored (channel 5, leader 3, node 1, lease
// 1000, retention 50).
func TestRuntimeFencing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		ce, le, ld uint64
		lease      int64
		code       slotstore.Code
		wantLease  int64
		wantLeader uint64
	}{
		{"older channel epoch", 4, 9, 1, 2000, slotstore.CodeEpochStale, 1000, 1},
		{"same channel epoch, older leader epoch", 5, 2, 1, 2000, slotstore.CodeEpochStale, 1000, 1},
		{"same epochs, same leader", 5, 3, 1, 2000, "", 2000, 1},
		{"same epochs, other leader", 5, 3, 2, 2000, slotstore.CodeConflict, 1000, 1},
		{"newer leader epoch, other leader", 5, 4, 2, 2000, "", 2000, 2},
		{"newer channel epoch, other leader", 6, 0, 3, 2000, "", 2000, 3},
		{"lease moving back keeps the stored lease", 5, 3, 1, 10, "", 1000, 1},
		{"newer epochs, lease moving back", 7, 1, 2, 10, "", 1000, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openStore(t, t.TempDir())
			s := newSM(t, db, 1, allSlots())
			base := runtimeOf("ch", 5, 3, 1, 1000)
			base.RetentionThroughSeq = 50
			first := mustOK(t, apply(t, s, 1, &meta.PutRuntime{Header: hdr("ch", "", 100), Runtime: base}))[0]
			r := apply(t, s, 2, &meta.PutRuntime{Header: hdr("ch", "", 200), Runtime: runtimeOf("ch", tc.ce, tc.le, tc.ld, tc.lease)})[0]
			wantCode(t, r, tc.code)
			got := getRuntime(t, s, "ch")
			if got.LeaseUntilMs != tc.wantLease || got.Leader != tc.wantLeader || got.RetentionThroughSeq != 50 {
				t.Fatalf("stored %+v", got)
			}
			if tc.code != "" {
				if got.Revision != first.Revision || r.Revision != first.Revision {
					t.Fatalf("a refused put wrote (revision %d, result %d, first %d)", got.Revision, r.Revision, first.Revision)
				}
			} else if got.CreatedAtMs != 100 || got.UpdatedAtMs != 200 || got.ChannelEpoch != tc.ce || got.LeaderEpoch != tc.le {
				t.Fatalf("applied put stored %+v", got)
			}
		})
	}
}

func TestRuntimeRetention(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	ref := meta.ChanRef{ChannelType: 2, ChannelID: "ch"}
	adv := func(idx, ce, leader, through uint64) meta.Result {
		return apply(t, s, idx, &meta.AdvanceRetention{Header: hdr("ch", "", 500), ChanRef: ref,
			ExpectedChannelEpoch: ce, ExpectedLeader: leader, ThroughSeq: through})[0]
	}
	wantCode(t, adv(1, 5, 1, 10), slotstore.CodeNotFound)
	mustOK(t, apply(t, s, 2, &meta.PutRuntime{Header: hdr("ch", "", 100), Runtime: runtimeOf("ch", 5, 3, 1, 1000)}))
	unchanged(t, db, 1, "guarded retention", func() {
		wantCode(t, adv(3, 4, 1, 10), slotstore.CodeConflict) // wrong epoch
		wantCode(t, adv(4, 5, 2, 10), slotstore.CodeConflict) // wrong leader
	})
	r := mustOK(t, []meta.Result{adv(5, 5, 1, 100)})[0]
	if got := getRuntime(t, s, "ch"); got.RetentionThroughSeq != 100 || got.UpdatedAtMs != 500 || got.Revision != r.Revision {
		t.Fatalf("advanced %+v", got)
	}
	unchanged(t, db, 1, "a lower or equal through_seq", func() {
		for i, seq := range []uint64{99, 100, 0} {
			r := mustOK(t, []meta.Result{adv(uint64(6+i), 5, 1, seq)})[0]
			rt, _ := meta.DecodeChannelRuntime(r.Value)
			if rt.RetentionThroughSeq != 100 {
				t.Fatalf("through_seq %d answered %+v", seq, rt)
			}
		}
	})
	// A put never moves retention back either.
	mustOK(t, apply(t, s, 10, &meta.PutRuntime{Header: hdr("ch", "", 600), Runtime: runtimeOf("ch", 6, 0, 2, 0)}))
	if got := getRuntime(t, s, "ch"); got.RetentionThroughSeq != 100 || got.LeaseUntilMs != 1000 {
		t.Fatalf("put moved the floors back: %+v", got)
	}
}
