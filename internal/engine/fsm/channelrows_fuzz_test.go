package fsm_test

import (
	"fmt"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// FuzzChannelRowApply applies arbitrary commands of the membership, CMD
// binding, runtime, migration task and event families (the fuzzer mutates
// encoded seeds; each decoded command is re-routed to its route key's hash
// slot so that it reaches its applier) to one replica: Update never fails
// or panics, every command gets a result, and the activity index stays in
// step with the memberships.
func FuzzChannelRowApply(f *testing.F) {
	uc := uch("u1", 2, "g1")
	ref := meta.ChanRef{ChannelType: 2, ChannelID: "g1"}
	rt := runtimeOf("g1", 1, 1, 1, 10)
	for _, c := range []meta.Command{
		putMember(uc, 5, 1, 2, 3),
		&meta.ReadMembership{Header: hdr("u1", "", 6), UserChannel: uc, ReadSeq: 9},
		&meta.HideMembership{Header: hdr("u1", "", 6), UserChannel: uc, ToSeq: 9},
		&meta.ActivateMembership{Header: hdr("u1", "", 7), UserChannel: uc},
		&meta.DeleteMembership{Header: hdr("u1", "", 7), UserChannel: uc},
		&meta.PutCmdBinding{Header: hdr("u1", "", 7), UserChannel: uc, StartSeq: 1},
		&meta.AckCmdBinding{Header: hdr("u1", "", 7), UserChannel: uc, AckSeq: 4},
		&meta.PutRuntime{Header: hdr("g1", "", 8), Runtime: rt},
		&meta.AdvanceRetention{Header: hdr("g1", "", 8), ChanRef: ref, ExpectedChannelEpoch: 1, ExpectedLeader: 1, ThroughSeq: 4},
		&meta.CreateChannelTask{Header: hdr("g1", "", 8), ChanRef: ref, Kind: meta.ChannelReplicaMove, SourceNode: 1, TargetNode: 2},
		advanceTask(1, meta.PhaseCreated, meta.PhaseCopying),
		&meta.AbortChannelTask{Header: hdr("g1", "", 9), ChanRef: ref, TaskID: 1},
		&meta.AppendEvent{Header: hdr("g1", "", 9), Event: meta.ChannelEvent{ChannelType: 2, ChannelID: "g1",
			ClientMsgNo: "m", EventKey: "k", EventID: "e", EventType: "t"}},
	} {
		f.Add(mustEncode(c))
	}
	db := openStore(f, f.TempDir())
	s := newSM(f, db, 1, allSlots(), func(c *fsm.Config) { c.EventCapacity = 3 })
	index := uint64(0)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := meta.DecodeCommand(data)
		if err != nil {
			return
		}
		c.Head().HashSlot = slotstore.HashSlotOfString(c.RouteKey())
		c.Head().IdempotencyKey = ""
		index++
		out, err := s.Update([]sm.Entry{{Index: index, Cmd: encodeCmds(c)}})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		rs, err := meta.DecodeResults(out[0].Result.Data)
		if err != nil || len(rs) != 1 {
			t.Fatalf("results %v, %v", rs, err)
		}
		if rs[0].Code == slotstore.CodeInternal {
			t.Fatalf("%T: internal: %s", c, rs[0].Message)
		}
		checkActivityIndex(t, db, 1)
		// Every listing still reads.
		for _, q := range []meta.Query{
			&meta.ListMemberships{HashSlot: slotstore.HashSlotOfString("u1"), UID: "u1"},
			&meta.ListEvents{HashSlot: slotstore.HashSlotOfString("g1"), ChanRef: ref},
			&meta.ListChannelTasks{HashSlot: slotstore.HashSlotOfString("g1"), ChanRef: ref},
		} {
			if _, err := s.Lookup(q); err != nil {
				t.Fatal(fmt.Errorf("%T: %w", q, err))
			}
		}
	})
}
