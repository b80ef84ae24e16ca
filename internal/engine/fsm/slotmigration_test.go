package fsm_test

import (
	"fmt"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func openGroup(t *testing.T, db *store.DB, g slotstore.GroupID, genesis []slotstore.HashSlot) *fsm.StateMachine {
	t.Helper()
	s := fsm.New(fsm.Config{Group: g, DB: db, Genesis: genesis})
	if _, err := s.Open(make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	return s
}

func apply1(t *testing.T, s *fsm.StateMachine, index *uint64, c meta.Command) meta.Result {
	t.Helper()
	*index++
	out, err := s.Update([]sm.Entry{{Index: *index, Cmd: meta.EncodeEntry([][]byte{mustEncode(c)})}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := meta.DecodeResults(out[0].Result.Data)
	if err != nil || len(rs) != 1 {
		t.Fatalf("results %v %v", rs, err)
	}
	return rs[0]
}

// TestSlotMigrationSteps walks one hash slot from group 1 to group 2 on the
// state machines directly: fenced writes are refused, the rows arrive
// whole under the target's prefix, ownership hands over, revisions never go
// back, and the source is left with nothing of the slot.
func TestSlotMigrationSteps(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := "moving-key"
	hs := slotstore.HashSlotOfString(key)
	src := openGroup(t, db, 1, []slotstore.HashSlot{hs})
	dst := openGroup(t, db, 2, nil)
	var si, di uint64
	for i := 0; i < 5; i++ {
		if r := apply1(t, src, &si, &meta.PutKV{Header: meta.Header{HashSlot: hs}, Key: key, Value: []byte{byte(i)}}); !r.OK() {
			t.Fatal(r)
		}
	}
	uid := ""
	for i := 0; uid == "" || slotstore.HashSlotOfString(uid) != hs; i++ {
		uid = fmt.Sprintf("u-%d", i)
	}
	if r := apply1(t, src, &si, &meta.CreateUser{Header: meta.Header{HashSlot: hs}, User: meta.User{UID: uid}}); !r.OK() {
		t.Fatalf("create user: %+v", r)
	}

	if r := apply1(t, dst, &di, &meta.ImportRows{Header: meta.Header{HashSlot: hs}}); !r.OK() {
		t.Fatalf("empty import: %+v", r)
	}
	if r := apply1(t, dst, &di, &meta.FenceSlot{Header: meta.Header{HashSlot: hs}}); r.OK() {
		t.Fatal("the target fenced a slot it does not own")
	}
	if r := apply1(t, src, &si, &meta.FenceSlot{Header: meta.Header{HashSlot: hs}}); !r.OK() {
		t.Fatal(r)
	}
	if r := apply1(t, src, &si, &meta.PutKV{Header: meta.Header{HashSlot: hs}, Key: key, Value: []byte("late")}); r.Code != slotstore.CodeSlotMigrating {
		t.Fatalf("a write to a fenced slot: %+v", r)
	}
	// Export in small chunks and import them.
	var after []byte
	rows := 0
	for {
		v, err := src.Lookup(&meta.ExportSlot{HashSlot: hs, After: after, MaxBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		ch := v.(*meta.SlotChunk)
		if len(ch.Rows) > 0 {
			after = ch.Rows[len(ch.Rows)-1].Key
			rows += len(ch.Rows)
			if r := apply1(t, dst, &di, &meta.ImportRows{Header: meta.Header{HashSlot: hs}, Rows: ch.Rows}); !r.OK() {
				t.Fatal(r)
			}
		}
		if ch.Done {
			break
		}
	}
	if rows != 9 {
		t.Fatalf("exported %d rows, want 9 (the key and the user, six change records, the change log's head)", rows)
	}
	srcRev, _ := src.Lookup(&meta.GetKV{HashSlot: hs, Key: key})
	if r := apply1(t, dst, &di, &meta.AcquireSlot{Header: meta.Header{HashSlot: hs}, MinRevision: 100}); !r.OK() || r.Revision < 100 {
		t.Fatalf("acquire: %+v", r)
	}
	got, err := dst.Lookup(&meta.GetKV{HashSlot: hs, Key: key})
	if err != nil || got.(*meta.KV).Revision != srcRev.(*meta.KV).Revision || got.(*meta.KV).Value[0] != 4 {
		t.Fatalf("target reads %+v, %v", got, err)
	}
	if r := apply1(t, dst, &di, &meta.PutKV{Header: meta.Header{HashSlot: hs}, Key: key, Value: []byte("new")}); !r.OK() || r.Revision <= 100 {
		t.Fatalf("first write on the target: %+v (revision must pass the source's)", r)
	}
	if r := apply1(t, dst, &di, &meta.ImportRows{Header: meta.Header{HashSlot: hs}}); r.OK() {
		t.Fatal("import into an owned slot was accepted")
	}
	if r := apply1(t, src, &si, &meta.ReleaseSlot{Header: meta.Header{HashSlot: hs}}); !r.OK() {
		t.Fatal(r)
	}
	if _, err := src.Lookup(&meta.GetKV{HashSlot: hs, Key: key}); slotstore.ErrorCode(err) != slotstore.CodeWrongGroup {
		t.Fatalf("the source still serves the slot: %v", err)
	}
	if r := apply1(t, src, &si, &meta.ReleaseSlot{Header: meta.Header{HashSlot: hs}}); !r.OK() {
		t.Fatalf("a repeated release: %+v", r)
	}
	n := 0
	it, _ := db.Pebble().NewIter(nil)
	p := meta.SlotPrefix(1, hs)
	for it.SeekGE(p); it.Valid() && len(it.Key()) >= len(p) && string(it.Key()[:len(p)]) == string(p); it.Next() {
		n++
	}
	it.Close()
	if n != 0 {
		t.Fatalf("the source keeps %d rows of the released slot", n)
	}
	// Ownership survives a reopen of both.
	src2 := openGroup(t, db, 1, nil)
	if owned, _ := src2.Lookup(fsm.OwnedQuery{}); len(owned.([]slotstore.HashSlot)) != 0 {
		t.Fatalf("source owns %v after reopening", owned)
	}
	dst2 := openGroup(t, db, 2, nil)
	if owned, _ := dst2.Lookup(fsm.OwnedQuery{}); len(owned.([]slotstore.HashSlot)) != 1 {
		t.Fatalf("target owns %v after reopening", owned)
	}
}
