package fsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestGetRows: one query answers every key of the group, in order — the
// row, missing, or wrong group for a key whose slot another group owns —
// and its answer travels between nodes as it is; a user and a channel's
// runtime meta are read by the same query of their tables.
func TestGetRows(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mine, other []string
	for i := 0; len(mine) < 3 || len(other) < 1; i++ {
		k := fmt.Sprintf("batch-%d", i)
		if slotstore.HashSlotOfString(k) < 128 {
			mine = append(mine, k)
		} else {
			other = append(other, k)
		}
	}
	s := openGroup(t, db, 1, slotRange(0, 128))
	var idx uint64
	for _, k := range mine[:2] {
		if r := apply1(t, s, &idx, &meta.PutKV{Header: meta.Header{HashSlot: slotstore.HashSlotOfString(k)}, Key: k, Value: []byte("v-" + k)}); !r.OK() {
			t.Fatal(r)
		}
	}
	keys := []string{mine[1], other[0], mine[2], mine[0]}
	v, err := s.Lookup(&meta.GetRows{HashSlot: slotstore.HashSlotOfString(mine[0]), Table: meta.TableKV, Keys: refsOf(keys)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := meta.EncodeAnswer(v)
	if err != nil {
		t.Fatal(err)
	}
	back, err := meta.DecodeAnswer(b)
	if err != nil {
		t.Fatal(err)
	}
	items := back.(*meta.RowBatch).Items
	want := []meta.BatchState{meta.BatchFound, meta.BatchWrongGroup, meta.BatchMissing, meta.BatchFound}
	if len(items) != len(keys) {
		t.Fatalf("%d items for %d keys", len(items), len(keys))
	}
	for i, it := range items {
		if it.State != want[i] || (it.Row != nil) != (want[i] == meta.BatchFound) {
			t.Fatalf("key %s: %+v, want state %d", keys[i], it, want[i])
		}
		if it.Row == nil {
			continue
		}
		kv, err := meta.DecodeKV(it.Row)
		if err != nil || kv.Key != keys[i] || string(kv.Value) != "v-"+keys[i] || kv.Revision == 0 {
			t.Fatalf("key %s: row %+v", keys[i], kv)
		}
	}
	// A user and a channel, read by their tables' queries.
	hs := slotstore.HashSlotOfString(mine[0])
	if r := apply1(t, s, &idx, &meta.CreateUser{Header: meta.Header{HashSlot: hs}, User: meta.User{UID: mine[0], Name: "Ada"}}); !r.OK() {
		t.Fatal(r)
	}
	if r := apply1(t, s, &idx, &meta.CreateChannel{Header: meta.Header{HashSlot: hs}, Channel: meta.ChannelInfo{Type: 2, ID: mine[0]}}); !r.OK() {
		t.Fatal(r)
	}
	v, err = s.Lookup(&meta.GetRows{HashSlot: hs, Table: meta.TableUser, Keys: refsOf([]string{mine[0], mine[1]})})
	if err != nil {
		t.Fatal(err)
	}
	if it := v.(*meta.RowBatch).Items; it[1].State != meta.BatchMissing || it[0].State != meta.BatchFound {
		t.Fatalf("users: %+v", it)
	} else if u, err := meta.DecodeUser(it[0].Row); err != nil || u.UID != mine[0] || u.Name != "Ada" {
		t.Fatalf("user: %+v %v", u, err)
	}
	v, err = s.Lookup(&meta.GetRows{HashSlot: hs, Table: meta.TableChannel, Keys: []meta.RowRef{{Key: mine[0], ChannelType: 2}, {Key: mine[0], ChannelType: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if it := v.(*meta.RowBatch).Items; it[1].State != meta.BatchMissing || it[0].State != meta.BatchFound {
		t.Fatalf("channels: %+v", it)
	} else if c, err := meta.DecodeChannel(it[0].Row); err != nil || c.ID != mine[0] || c.Type != 2 {
		t.Fatalf("channel: %+v %v", c, err)
	}
	if _, err := s.Lookup(&meta.GetRows{HashSlot: hs, Table: meta.TableDedup, Keys: refsOf(keys)}); slotstore.ErrorCode(err) != slotstore.CodeInvalidArgument {
		t.Fatalf("a batch read of the idempotency records: %v", err)
	}
}

// TestGetRowsBoundsItsAnswer: an answer carries values up to
// MaxBatchAnswerBytes; the keys past it are answered "not read" (asked
// again by the caller), and the first key is read whatever its size.
func TestGetRowsBoundsItsAnswer(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := openGroup(t, db, 1, slotRange(0, 256))
	var idx uint64
	var keys []string
	big := make([]byte, meta.MaxValueBytes)
	for i := 0; len(keys)*meta.MaxValueBytes < meta.MaxBatchAnswerBytes+4*meta.MaxValueBytes; i++ {
		k := fmt.Sprintf("big-%d", i)
		if r := apply1(t, s, &idx, &meta.PutKV{Header: meta.Header{HashSlot: slotstore.HashSlotOfString(k)}, Key: k, Value: big}); !r.OK() {
			t.Fatal(r)
		}
		keys = append(keys, k)
	}
	v, err := s.Lookup(&meta.GetRows{HashSlot: slotstore.HashSlotOfString(keys[0]), Table: meta.TableKV, Keys: refsOf(keys)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := meta.EncodeAnswer(v)
	if err != nil || len(b) > meta.MaxBatchAnswerBytes+meta.MaxValueBytes+64*len(keys) {
		t.Fatalf("an answer of %d bytes: %v", len(b), err)
	}
	read, notRead := 0, 0
	for i, it := range v.(*meta.RowBatch).Items {
		switch {
		case it.State == meta.BatchFound && notRead == 0:
			read++
		case it.State == meta.BatchNotRead:
			notRead++
		default:
			t.Fatalf("item %d: state %d after %d read and %d not", i, it.State, read, notRead)
		}
	}
	if read == 0 || notRead == 0 || read*meta.MaxValueBytes > meta.MaxBatchAnswerBytes+meta.MaxValueBytes {
		t.Fatalf("%d read, %d not read", read, notRead)
	}
}

// TestReleaseNeverShowsASlotEmpty: between the commit of a release (the
// slot's rows deleted) and its publish, a read of the slot answers
// wrong_group — asked again where the slot went — never "no such row"
// for a row that exists in the slot's new group.
func TestReleaseNeverShowsASlotEmpty(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := "released-key"
	hs := slotstore.HashSlotOfString(key)
	src := openGroup(t, db, 1, []slotstore.HashSlot{hs})
	var idx uint64
	h := meta.Header{HashSlot: hs}
	for _, c := range []meta.Command{&meta.PutKV{Header: h, Key: key, Value: []byte("x")}, &meta.FenceSlot{Header: h}} {
		if r := apply1(t, src, &idx, c); !r.OK() {
			t.Fatal(r)
		}
	}
	checked := false
	src.SetAfterCommit(func() {
		if checked {
			return
		}
		checked = true
		if v, err := src.Lookup(&meta.GetKV{HashSlot: hs, Key: key}); slotstore.ErrorCode(err) != slotstore.CodeWrongGroup {
			t.Errorf("a single read between the release's commit and publish: %v, %v (want wrong_group)", v, err)
		}
		v, err := src.Lookup(&meta.GetRows{HashSlot: hs, Table: meta.TableKV, Keys: refsOf([]string{key})})
		if err != nil || v.(*meta.RowBatch).Items[0].State != meta.BatchWrongGroup {
			t.Errorf("a batch read between the release's commit and publish: %+v, %v (want wrong group)", v, err)
		}
		if out, err := fsm.GetRowsTogether([]fsm.RowsPart{{SM: src, Q: &meta.GetRows{HashSlot: hs, Table: meta.TableKV, Keys: refsOf([]string{key})}}}); err != nil ||
			out[0].Items[0].State != meta.BatchWrongGroup {
			t.Errorf("a node's read of many groups between the release's commit and publish: %+v, %v (want wrong group)", out, err)
		}
	})
	if r := apply1(t, src, &idx, &meta.ReleaseSlot{Header: h}); !r.OK() {
		t.Fatal(r)
	}
	if !checked {
		t.Fatal("the seam did not run")
	}
}

// TestReadAcrossAReleaseAnswersWrongGroup: a lookup that checked its slot
// before a release and reads after it (the release's Update lands between
// the check and the read) answers wrong_group, not "no such row".
func TestReadAcrossAReleaseAnswersWrongGroup(t *testing.T) {
	key := "read-across"
	hs := slotstore.HashSlotOfString(key)
	h := meta.Header{HashSlot: hs}
	s := openGroup(t, openStore(t, t.TempDir()), 1, []slotstore.HashSlot{hs})
	var idx uint64
	for _, c := range []meta.Command{&meta.PutKV{Header: h, Key: key, Value: []byte("x")}, &meta.FenceSlot{Header: h}} {
		if r := apply1(t, s, &idx, c); !r.OK() {
			t.Fatal(r)
		}
	}
	released := false
	s.SetBeforeGet(func() {
		if !released {
			released = true
			if r := apply1(t, s, &idx, &meta.ReleaseSlot{Header: h}); !r.OK() {
				t.Error(r)
			}
		}
	})
	v, err := s.Lookup(&meta.GetKV{HashSlot: hs, Key: key})
	if !released || slotstore.ErrorCode(err) != slotstore.CodeWrongGroup {
		t.Fatalf("a read across the release: %v, %v (released %v; want wrong_group)", v, err, released)
	}
}

// TestWriteKVs: a batch of one hash slot's writes is applied whole at one
// revision, each operation seeing the ones before it; one condition
// failing, nothing is written — the failed operation says why, the others
// that they were aborted.
func TestWriteKVs(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hs := slotstore.HashSlotOfString("w-a")
	var keys []string
	for i := 0; len(keys) < 4; i++ {
		if k := fmt.Sprintf("w-%d", i); slotstore.HashSlotOfString(k) == hs {
			keys = append(keys, k)
		}
	}
	s := openGroup(t, db, 1, []slotstore.HashSlot{hs})
	var idx uint64
	h := meta.Header{HashSlot: hs}
	write := func(ops ...meta.KVOp) (meta.Result, []meta.KVWriteResult) {
		t.Helper()
		r := apply1(t, s, &idx, &meta.WriteKVs{Header: h, Ops: ops})
		if !r.OK() {
			t.Fatalf("the command failed: %+v", r)
		}
		res, err := meta.DecodeKVWriteResults(r.Value)
		if err != nil || len(res.Items) != len(ops) {
			t.Fatalf("results %+v, %v", res, err)
		}
		return r, res.Items
	}
	get := func(k string) *meta.KV {
		v, err := s.Lookup(&meta.GetKV{HashSlot: hs, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		return v.(*meta.KV)
	}
	a, b, c, d := keys[0], keys[1], keys[2], keys[3]
	r, items := write(meta.KVOp{Key: a, Value: []byte("1")}, meta.KVOp{Key: b, Value: []byte("2"), Cond: meta.Cond{Kind: meta.CondIfAbsent}},
		meta.KVOp{Key: c, Delete: true}, meta.KVOp{Key: a, Value: []byte("1b"), Cond: meta.Cond{Kind: meta.CondIfExists}})
	for i, it := range items {
		if it.Code != "" || it.Revision != r.Revision {
			t.Fatalf("operation %d: %+v (command revision %d)", i, it, r.Revision)
		}
	}
	if items[2].Existed || !items[3].Existed {
		t.Fatalf("existed: %+v", items)
	}
	if got := get(a); got == nil || string(got.Value) != "1b" || got.Revision != r.Revision {
		t.Fatalf("a: %+v", got)
	}
	// b exists now: the batch fails whole, d is not written.
	r2, items := write(meta.KVOp{Key: d, Value: []byte("4")}, meta.KVOp{Key: b, Value: []byte("x"), Cond: meta.Cond{Kind: meta.CondIfAbsent}},
		meta.KVOp{Key: a, Delete: true})
	if items[0].Code != slotstore.CodeAborted || items[1].Code != slotstore.CodeFailedPrecondition || items[1].Revision != r.Revision || items[2].Code != slotstore.CodeAborted {
		t.Fatalf("the failed batch: %+v", items)
	}
	if get(d) != nil || get(a) == nil || r2.Revision != 0 {
		t.Fatalf("a failed batch wrote something: d %+v, a %+v, revision %d", get(d), get(a), r2.Revision)
	}
	// A condition on the revision of a row written earlier in the batch
	// fails: that revision is not known yet.
	_, items = write(meta.KVOp{Key: d, Value: []byte("4")}, meta.KVOp{Key: d, Delete: true, Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: r.Revision}})
	if items[1].Code != slotstore.CodeFailedPrecondition || items[0].Code != slotstore.CodeAborted {
		t.Fatalf("a revision condition on a row of the batch: %+v", items)
	}
}

// TestRecoveryNeverShowsASlotEmpty: while a replica recovers from an image
// in which a slot it owns was released, a read of the slot answers
// wrong_group — asked again — not the image's "no such row"; after the
// recovery it does so too, the slot being gone.
func TestRecoveryNeverShowsASlotEmpty(t *testing.T) {
	key := "recovered-key"
	hs := slotstore.HashSlotOfString(key)
	h := meta.Header{HashSlot: hs}
	// The image: the slot written, fenced and released.
	src := openGroup(t, openStore(t, t.TempDir()), 1, []slotstore.HashSlot{hs})
	var si uint64
	for _, c := range []meta.Command{&meta.PutKV{Header: h, Key: key, Value: []byte("x")}, &meta.FenceSlot{Header: h}, &meta.ReleaseSlot{Header: h}} {
		if r := apply1(t, src, &si, c); !r.OK() {
			t.Fatal(r)
		}
	}
	ctx, err := src.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var img bytes.Buffer
	if err := src.SaveSnapshot(ctx, &img, nil); err != nil {
		t.Fatal(err)
	}
	// The replica: the slot still owned, the key there.
	r := openGroup(t, openStore(t, t.TempDir()), 1, []slotstore.HashSlot{hs})
	var ri uint64
	if res := apply1(t, r, &ri, &meta.PutKV{Header: h, Key: key, Value: []byte("x")}); !res.OK() {
		t.Fatal(res)
	}
	checked := false
	r.SetAfterIngest(func() {
		checked = true
		if v, err := r.Lookup(&meta.GetKV{HashSlot: hs, Key: key}); slotstore.ErrorCode(err) != slotstore.CodeWrongGroup {
			t.Errorf("a read during the recovery: %v, %v (want wrong_group)", v, err)
		}
		v, err := r.Lookup(&meta.GetRows{HashSlot: hs, Table: meta.TableKV, Keys: refsOf([]string{key})})
		if err != nil || v.(*meta.RowBatch).Items[0].State != meta.BatchWrongGroup {
			t.Errorf("a batch read during the recovery: %+v, %v (want wrong group)", v, err)
		}
	})
	if err := r.RecoverFromSnapshot(bytes.NewReader(img.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the seam did not run")
	}
	if _, err := r.Lookup(&meta.GetKV{HashSlot: hs, Key: key}); slotstore.ErrorCode(err) != slotstore.CodeWrongGroup {
		t.Fatalf("after the recovery: %v", err)
	}
}

func refsOf(keys []string) []meta.RowRef {
	refs := make([]meta.RowRef, len(keys))
	for i, k := range keys {
		refs[i] = meta.RowRef{Key: k}
	}
	return refs
}

// TestGetRowsTogether: the parts of many groups on one store are read from
// one view, each as its own group's Lookup answers it (a key of another
// group's slot is wrong group, even when that group is in the same read);
// parts of groups on different stores are refused, not read from two.
func TestGetRowsTogether(t *testing.T) {
	db := openStore(t, t.TempDir())
	a, b := newSM(t, db, 1, slotRange(0, 128)), newSM(t, db, 2, slotRange(128, 256))
	ka := keysIn("a", 3, slotRange(0, 128))
	kb := keysIn("b", 2, slotRange(128, 256))
	var ia, ib uint64
	for _, k := range ka[:2] {
		if r := apply1(t, a, &ia, putKV(k, "v-"+k)); !r.OK() {
			t.Fatal(r)
		}
	}
	if r := apply1(t, b, &ib, putKV(kb[0], "v-"+kb[0])); !r.OK() {
		t.Fatal(r)
	}
	qa := &meta.GetRows{HashSlot: slotstore.HashSlotOfString(ka[0]), Table: meta.TableKV, Keys: refsOf([]string{ka[0], kb[0], ka[2], ka[1]})}
	qb := &meta.GetRows{HashSlot: slotstore.HashSlotOfString(kb[0]), Table: meta.TableKV, Keys: refsOf([]string{kb[1], kb[0]})}
	out, err := fsm.GetRowsTogether([]fsm.RowsPart{{SM: a, Q: qa}, {SM: b, Q: qb}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got *meta.RowBatch, keys []string, want []meta.BatchState) {
		t.Helper()
		if len(got.Items) != len(want) {
			t.Fatalf("%s: %d items, want %d", name, len(got.Items), len(want))
		}
		for i, it := range got.Items {
			if it.State != want[i] {
				t.Fatalf("%s key %s: state %d, want %d", name, keys[i], it.State, want[i])
			}
			if it.State == meta.BatchFound {
				if kv, err := meta.DecodeKV(it.Row); err != nil || kv.Key != keys[i] || string(kv.Value) != "v-"+keys[i] {
					t.Fatalf("%s key %s: row %+v %v", name, keys[i], kv, err)
				}
			}
		}
	}
	check("group 1", out[0], []string{ka[0], kb[0], ka[2], ka[1]}, []meta.BatchState{meta.BatchFound, meta.BatchWrongGroup, meta.BatchMissing, meta.BatchFound})
	check("group 2", out[1], []string{kb[1], kb[0]}, []meta.BatchState{meta.BatchMissing, meta.BatchFound})
	// Each part answers as its group's own Lookup does.
	for i, p := range []fsm.RowsPart{{SM: a, Q: qa}, {SM: b, Q: qb}} {
		v, err := p.SM.Lookup(p.Q)
		if err != nil {
			t.Fatal(err)
		}
		for j, it := range v.(*meta.RowBatch).Items {
			if it.State != out[i].Items[j].State || !bytes.Equal(it.Row, out[i].Items[j].Row) {
				t.Fatalf("part %d key %d: together %+v, alone %+v", i, j, out[i].Items[j], it)
			}
		}
	}
	other := newSM(t, openStore(t, t.TempDir()), 3, slotRange(0, 128))
	if _, err := fsm.GetRowsTogether([]fsm.RowsPart{{SM: a, Q: qa}, {SM: other, Q: qa}}); slotstore.ErrorCode(err) != slotstore.CodeInternal {
		t.Fatalf("parts of two stores: %v (want internal)", err)
	}
	if _, err := fsm.GetRowsTogether([]fsm.RowsPart{{SM: a, Q: &meta.GetRows{HashSlot: qa.HashSlot, Table: meta.TableDedup, Keys: qa.Keys}}}); slotstore.ErrorCode(err) != slotstore.CodeInvalidArgument {
		t.Fatalf("a part of the idempotency records: %v (want invalid_argument)", err)
	}
	if out, err := fsm.GetRowsTogether(nil); err != nil || out != nil {
		t.Fatalf("no parts: %v %v", out, err)
	}
}

// TestSlotWrites: the WriteKVs of many slots of a group in one command —
// each part applied as if alone: its own revision, a failed condition
// holding back only its slot, a fenced slot answering slot_migrating and a
// slot the group does not own wrong_group; each part's idempotency record
// is the one a lone WriteKVs of it writes (a replay answers from it, a
// different request under its key conflicts), and the retryable parts are
// not remembered: sent again once their slot is back, they are applied.
func TestSlotWrites(t *testing.T) {
	db := openStore(t, t.TempDir())
	slots := []slotstore.HashSlot{1, 2, 3}
	s := openGroup(t, db, 1, slots)
	var idx uint64
	k := func(hs slotstore.HashSlot, n int) string {
		return keysIn(fmt.Sprintf("sw%d", hs), n+1, []slotstore.HashSlot{hs})[n]
	}
	if r := apply1(t, s, &idx, putKV(k(2, 0), "old")); !r.OK() {
		t.Fatal(r)
	}
	if r := apply1(t, s, &idx, &meta.FenceSlot{Header: meta.Header{HashSlot: 3}}); !r.OK() {
		t.Fatal(r)
	}
	part := func(hs slotstore.HashSlot, idem string, ops ...meta.KVOp) meta.WriteKVs {
		return meta.WriteKVs{Header: meta.Header{HashSlot: hs, IdempotencyKey: idem}, Ops: ops}
	}
	cmd := &meta.SlotWrites{Header: meta.Header{HashSlot: 1, TimeMs: 5000}, Parts: []meta.WriteKVs{
		part(1, "req\t1", meta.KVOp{Key: k(1, 0), Value: []byte("a")}, meta.KVOp{Key: k(1, 1), Value: []byte("b")}),
		part(2, "req\t2", meta.KVOp{Key: k(2, 1), Value: []byte("c")}, meta.KVOp{Key: k(2, 0), Value: []byte("d"), Cond: meta.Cond{Kind: meta.CondIfAbsent}}),
		part(3, "req\t3", meta.KVOp{Key: k(3, 0), Value: []byte("e")}),
		part(4, "req\t4", meta.KVOp{Key: k(4, 0), Value: []byte("f")}),
	}}
	parts := func(r meta.Result) []meta.Result {
		t.Helper()
		if !r.OK() {
			t.Fatalf("the command failed: %+v", r)
		}
		rs, err := meta.DecodeResults(r.Value)
		if err != nil || len(rs) != len(cmd.Parts) {
			t.Fatalf("part results %+v, %v", rs, err)
		}
		return rs
	}
	items := func(r meta.Result) []meta.KVWriteResult {
		t.Helper()
		res, err := meta.DecodeKVWriteResults(r.Value)
		if err != nil {
			t.Fatalf("part result %+v: %v", r, err)
		}
		return res.Items
	}
	first := parts(apply1(t, s, &idx, cmd))
	if it := items(first[0]); first[0].Revision == 0 || it[0].Code != "" || it[1].Revision != first[0].Revision {
		t.Fatalf("slot 1: %+v %+v", first[0], it)
	}
	if it := items(first[1]); it[0].Code != slotstore.CodeAborted || it[1].Code != slotstore.CodeFailedPrecondition {
		t.Fatalf("slot 2 (a failed condition): %+v", it)
	}
	if first[2].Code != slotstore.CodeSlotMigrating || first[3].Code != slotstore.CodeWrongGroup {
		t.Fatalf("slots 3 (fenced) and 4 (not here): %+v, %+v", first[2], first[3])
	}
	get := func(key string) *meta.KV {
		v, err := s.Lookup(&meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return v.(*meta.KV)
	}
	if got := get(k(1, 1)); got == nil || string(got.Value) != "b" || got.UpdatedAtMs != 5000 {
		t.Fatalf("slot 1's row: %+v", got)
	}
	if got := get(k(2, 1)); got != nil {
		t.Fatalf("slot 2's failed part wrote %+v", got)
	}
	// The same command again: slots 1 and 2 replay their first answers.
	again := parts(apply1(t, s, &idx, cmd))
	for i := range 2 {
		if !again[i].Replayed || again[i].Revision != first[i].Revision || !bytes.Equal(again[i].Value, first[i].Value) {
			t.Fatalf("part %d again: %+v, first %+v", i, again[i], first[i])
		}
	}
	// A lone WriteKVs of slot 1's part under its key replays the same
	// record; other operations under that key conflict.
	lone := cmd.Parts[0]
	if r := apply1(t, s, &idx, &lone); !r.Replayed || r.Revision != first[0].Revision {
		t.Fatalf("slot 1's part alone: %+v", r)
	}
	other := part(1, "req\t1", meta.KVOp{Key: k(1, 0), Value: []byte("z")})
	if r := apply1(t, s, &idx, &other); r.Code != slotstore.CodeConflict {
		t.Fatalf("another request under slot 1's key: %+v", r)
	}
	// The fenced slot unfenced: its part, never remembered, is applied now.
	if r := apply1(t, s, &idx, &meta.UnfenceSlot{Header: meta.Header{HashSlot: 3}}); !r.OK() {
		t.Fatal(r)
	}
	third := parts(apply1(t, s, &idx, cmd))
	if third[2].Code != "" || third[2].Replayed || get(k(3, 0)) == nil {
		t.Fatalf("slot 3 unfenced: %+v", third[2])
	}
}

// TestSlotWritesReadsItsRowsOnceAhead: a SlotWrites reads its parts' rows
// ahead with one iterator, and a row read ahead serves one part only: a
// second part of the same slot sees what the first wrote (its condition
// on the first part's revision holds, its create revision is the first's),
// as parts applied one by one would.
func TestSlotWritesReadsItsRowsOnceAhead(t *testing.T) {
	db := openStore(t, t.TempDir())
	s := openGroup(t, db, 1, []slotstore.HashSlot{1})
	var idx uint64
	key := keysIn("ahead", 1, []slotstore.HashSlot{1})[0]
	cmd := &meta.SlotWrites{Header: meta.Header{HashSlot: 1, TimeMs: 5000}, Parts: []meta.WriteKVs{
		{Header: meta.Header{HashSlot: 1}, Ops: []meta.KVOp{{Key: key, Value: []byte("v1"), Cond: meta.Cond{Kind: meta.CondIfAbsent}}}},
		{Header: meta.Header{HashSlot: 1}, Ops: []meta.KVOp{{Key: key, Value: []byte("v2"), Cond: meta.Cond{Kind: meta.CondIfExists}}}},
	}}
	r := apply1(t, s, &idx, cmd)
	rs, err := meta.DecodeResults(r.Value)
	if !r.OK() || err != nil || len(rs) != 2 {
		t.Fatalf("the command: %+v %+v %v", r, rs, err)
	}
	for i, p := range rs {
		items, err := meta.DecodeKVWriteResults(p.Value)
		if err != nil || items.Items[0].Code != "" {
			t.Fatalf("part %d: %+v %+v %v", i, p, items, err)
		}
	}
	v, err := s.Lookup(&meta.GetKV{HashSlot: 1, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if kv := v.(*meta.KV); string(kv.Value) != "v2" || kv.CreateRevision != rs[0].Revision || kv.Revision != rs[1].Revision {
		t.Fatalf("the row: %+v, want v2 created at %d, written at %d", kv, rs[0].Revision, rs[1].Revision)
	}
}
