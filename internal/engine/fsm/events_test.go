package fsm_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func TestEventProjectionIsBounded(t *testing.T) {
	t.Parallel()
	const capacity = 5
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots(), func(c *fsm.Config) { c.EventCapacity = capacity })
	ref := meta.ChanRef{ChannelType: 2, ChannelID: "ev"}
	appendEv := func(typ uint8, n int) *meta.AppendEvent {
		return &meta.AppendEvent{Header: hdr("ev", "", int64(1000+n)), Event: meta.ChannelEvent{ChannelType: typ, ChannelID: "ev",
			ClientMsgNo: "m", EventKey: "k", EventID: fmt.Sprintf("e%d", n), EventType: "delta", Payload: []byte(`{"n":1}`)}}
	}
	list := func(typ uint8, limit int) ([]string, uint64, uint64) {
		q := &meta.ListEvents{HashSlot: slotstore.HashSlotOfString("ev"), ChanRef: meta.ChanRef{ChannelType: typ, ChannelID: "ev"}, Limit: limit}
		var out []string
		for {
			v, err := s.Lookup(q)
			if err != nil {
				t.Fatal(err)
			}
			p := v.(*meta.EventPage)
			for _, ev := range p.Items {
				out = append(out, ev.EventID)
			}
			if !p.More {
				return out, p.Count, p.LastSeq
			}
			q.BeforeSeq = p.Items[len(p.Items)-1].Seq
		}
	}
	// Three appends, then five in one entry (one batch) trimming as they go.
	for i := 1; i <= 3; i++ {
		r := mustOK(t, apply(t, s, uint64(i), appendEv(ref.ChannelType, i)))[0]
		if ev, _ := meta.DecodeChannelEvent(r.Value); ev.Seq != uint64(i) || ev.CreatedAtMs != int64(1000+i) {
			t.Fatalf("append %d: %+v", i, ev)
		}
	}
	mustOK(t, apply(t, s, 4, appendEv(2, 4), appendEv(2, 5), appendEv(2, 6), appendEv(2, 7), appendEv(2, 8)))
	// Another type of the same channel id is another projection.
	mustOK(t, apply(t, s, 5, appendEv(3, 100)))
	for _, limit := range []int{1, 2, 100} {
		got, count, last := list(2, limit)
		if fmt.Sprint(got) != "[e8 e7 e6 e5 e4]" || count != capacity || last != 8 {
			t.Fatalf("limit %d: %v (count %d, last %d)", limit, got, count, last)
		}
	}
	if got, count, _ := list(3, 10); fmt.Sprint(got) != "[e100]" || count != 1 {
		t.Fatalf("other type: %v %d", got, count)
	}
	if n := countTable(t, db, 1, meta.TableEvent); n != capacity+1+1+1 { // 5 + its counter, 1 + its counter
		t.Fatalf("%d event rows", n)
	}
	// Invalid events are refused and write nothing.
	unchanged(t, db, 1, "invalid events", func() {
		bad := appendEv(2, 9)
		bad.Event.EventID = ""
		wantCode(t, apply(t, s, 6, bad)[0], slotstore.CodeInvalidArgument)
		bad = appendEv(0, 9)
		wantCode(t, apply(t, s, 7, bad)[0], slotstore.CodeInvalidArgument)
	})
}
