package meta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Codec tests of memberships, CMD bindings, channel runtime meta, channel
// migration tasks and message events: entities, commands, queries and
// answers round-trip, and every truncation, wrong version and oversize
// field is rejected with ErrMalformed.

func sampleMemberships() []*meta.Membership {
	return []*meta.Membership{
		{},
		{UID: "u1", ChannelType: 2, ChannelID: "group-1", JoinSeq: 10, ReadSeq: 300, DeletedToSeq: 5,
			ActivatedAtMs: 1_700_000_000_000, Tombstone: true, CreatedAtMs: 1, UpdatedAtMs: 2, Revision: 99},
		{UID: "用户", ChannelType: 255, ChannelID: strings.Repeat("c", meta.MaxKeyBytes), JoinSeq: math.MaxUint64,
			ReadSeq: math.MaxUint64, DeletedToSeq: math.MaxUint64, ActivatedAtMs: math.MaxInt64,
			CreatedAtMs: math.MinInt64, UpdatedAtMs: -1, Revision: math.MaxUint64},
	}
}

func sampleCmdBindings() []*meta.CmdBinding {
	return []*meta.CmdBinding{
		{},
		{UID: "u1", ChannelType: 1, ChannelID: "c\x00d", StartSeq: 7, AckSeq: 300, CreatedAtMs: 5, UpdatedAtMs: 6, Revision: 3},
		{UID: strings.Repeat("u", meta.MaxKeyBytes), ChannelType: 255, ChannelID: "x", StartSeq: math.MaxUint64, AckSeq: math.MaxUint64,
			CreatedAtMs: math.MinInt64, UpdatedAtMs: math.MaxInt64, Revision: math.MaxUint64},
	}
}

func sampleRuntimes() []*meta.ChannelRuntime {
	return []*meta.ChannelRuntime{
		{},
		{ChannelType: 2, ChannelID: "g1", ChannelEpoch: 3, LeaderEpoch: 9, Leader: 1, Replicas: []uint64{1, 2, 3},
			ISR: []uint64{1, 3}, MinISR: 2, Status: meta.RuntimeMigrating, LeaseUntilMs: 1_700_000_000_000,
			RetentionThroughSeq: 12345, WriteFence: meta.WriteFence{Token: "tok", Version: 4, Reason: "switching", UntilMs: 99},
			CreatedAtMs: 1, UpdatedAtMs: 2, Revision: 17},
		{ChannelType: 255, ChannelID: "频道", ChannelEpoch: math.MaxUint64, LeaderEpoch: math.MaxUint64, Leader: math.MaxUint64,
			Replicas: []uint64{math.MaxUint64}, ISR: []uint64{math.MaxUint64}, MinISR: math.MaxUint64, Status: 200,
			LeaseUntilMs: math.MinInt64, RetentionThroughSeq: math.MaxUint64, CreatedAtMs: math.MaxInt64, Revision: 1},
	}
}

func sampleTasks() []*meta.ChannelTask {
	return []*meta.ChannelTask{
		{},
		{ChannelType: 1, ChannelID: "c", TaskID: 1, Kind: meta.ChannelReplicaMove, SourceNode: 1, TargetNode: 2,
			Phase: meta.PhaseCatchingUp, Note: "lag 12", CreatedAtMs: 5, UpdatedAtMs: 6, FinishedAtMs: 0, Revision: 8},
		{ChannelType: 255, ChannelID: "x", TaskID: math.MaxUint64, Kind: meta.ChannelLeaderTransfer, SourceNode: math.MaxUint64,
			TargetNode: 3, Phase: meta.PhaseAborted, Note: strings.Repeat("n", 300), CreatedAtMs: math.MinInt64,
			UpdatedAtMs: math.MaxInt64, FinishedAtMs: -1, Revision: math.MaxUint64},
	}
}

func sampleEvents() []*meta.ChannelEvent {
	return []*meta.ChannelEvent{
		{},
		{ChannelType: 2, ChannelID: "g1", Seq: 1, ClientMsgNo: "cmn-1", EventKey: "stream", EventID: "e-1",
			EventType: "stream.delta", Status: "open", Payload: []byte(`{"text":"hi"}`), CreatedAtMs: 5, Revision: 6},
		{ChannelType: 255, ChannelID: "x", Seq: math.MaxUint64, ClientMsgNo: "n", EventKey: "k", EventID: "i",
			EventType: "t", Payload: binaryValue(meta.MaxEventPayloadBytes), CreatedAtMs: math.MinInt64, Revision: math.MaxUint64},
	}
}

// checkEntity runs the entity codec checks on v.
func checkEntity[T any](t *testing.T, name string, v *T, enc func(*T) []byte, dec func([]byte) (*T, error)) {
	t.Helper()
	b := enc(v)
	got, err := dec(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("%s: round trip\n got %+v\nwant %+v", name, got, v)
	}
	if !bytes.Equal(enc(got), b) {
		t.Fatalf("%s: re-encoding differs", name)
	}
	// Fields are appended only: a decoder ignores what a newer writer added.
	if got, err := dec(cat(b, []byte{1, 2, 3})); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("%s with appended bytes: %+v, %v", name, got, err)
	}
	for _, ver := range []byte{0, 2, 0xFF} {
		bad := bytes.Clone(b)
		bad[0] = ver
		_, err := dec(bad)
		wantMalformed(t, fmt.Sprintf("%s version %d", name, ver), err)
	}
	for cut := range len(b) {
		if len(b) > 4096 && cut > 1024 && cut < len(b)-1024 && cut%997 != 0 {
			continue
		}
		_, err := dec(b[:cut:cut])
		wantMalformed(t, fmt.Sprintf("%s cut %d/%d", name, cut, len(b)), err)
	}
	// The decoded value owns its memory.
	buf := bytes.Clone(b)
	got, _ = dec(buf)
	for i := range buf {
		buf[i] = 0xEE
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("%s: decoded value changed with its input", name)
	}
}

func TestChannelRowEntitiesRoundTrip(t *testing.T) {
	for i, m := range sampleMemberships() {
		// The last field (ProjectedVersion) is optional for older rows, so
		// only cuts before it must fail.
		checkEntity(t, fmt.Sprintf("membership %d", i), m, meta.EncodeMembership, func(b []byte) (*meta.Membership, error) {
			full := meta.EncodeMembership(m)
			if len(b) == len(full)-1 && bytes.Equal(b, full[:len(b)]) && m.ProjectedVersion < 0x80 {
				return nil, fmt.Errorf("%w: (optional trailing field cut)", meta.ErrMalformed)
			}
			return meta.DecodeMembership(b)
		})
	}
	for i, b := range sampleCmdBindings() {
		checkEntity(t, fmt.Sprintf("cmd binding %d", i), b, meta.EncodeCmdBinding, meta.DecodeCmdBinding)
	}
	for i, r := range sampleRuntimes() {
		checkEntity(t, fmt.Sprintf("runtime %d", i), r, meta.EncodeChannelRuntime, meta.DecodeChannelRuntime)
	}
	for i, tk := range sampleTasks() {
		checkEntity(t, fmt.Sprintf("task %d", i), tk, meta.EncodeChannelTask, meta.DecodeChannelTask)
	}
	for i, ev := range sampleEvents() {
		checkEntity(t, fmt.Sprintf("event %d", i), ev, meta.EncodeChannelEvent, meta.DecodeChannelEvent)
	}
	for _, w := range []meta.SeqWindow{{}, {Last: 5, Oldest: 3}, {Last: math.MaxUint64, Oldest: math.MaxUint64}} {
		b := meta.EncodeSeqWindow(w)
		if got, err := meta.DecodeSeqWindow(b); err != nil || got != w {
			t.Fatalf("window %+v: %+v, %v", w, got, err)
		}
		for cut := range len(b) {
			_, err := meta.DecodeSeqWindow(b[:cut])
			wantMalformed(t, fmt.Sprintf("window cut %d", cut), err)
		}
	}
}

func TestChannelRowEntityGoldenEncoding(t *testing.T) {
	m := &meta.Membership{UID: "u", ChannelType: 2, ChannelID: "c", JoinSeq: 1, ReadSeq: 300, DeletedToSeq: 0,
		ActivatedAtMs: 64, Tombstone: true, CreatedAtMs: 1, UpdatedAtMs: -1, Revision: 5}
	want := []byte{1, 1, 'u', 2, 1, 'c', 1, 0xAC, 0x02, 0, 0x80, 0x01, 1, 2, 1, 5, 0}
	if got := meta.EncodeMembership(m); !bytes.Equal(got, want) {
		t.Errorf("EncodeMembership = % x\n                   want % x", got, want)
	}
	// A row written before ProjectedVersion existed (no trailing field)
	// still decodes, with version 0.
	if old, err := meta.DecodeMembership(want[:len(want)-1]); err != nil || old.Revision != 5 || old.ProjectedVersion != 0 {
		t.Errorf("a pre-projection row: %+v, %v", old, err)
	}
	r := &meta.ChannelRuntime{ChannelType: 1, ChannelID: "c", ChannelEpoch: 2, LeaderEpoch: 3, Leader: 1,
		Replicas: []uint64{1, 2}, ISR: []uint64{1}, MinISR: 1, Status: meta.RuntimeActive, LeaseUntilMs: 1,
		RetentionThroughSeq: 4, WriteFence: meta.WriteFence{Token: "t", Version: 1, Reason: "", UntilMs: 0}, Revision: 9}
	want = []byte{1, 1, 1, 'c', 2, 3, 1, 2, 1, 2, 1, 1, 1, 1, 2, 4, 1, 't', 1, 0, 0, 0, 0, 9}
	if got := meta.EncodeChannelRuntime(r); !bytes.Equal(got, want) {
		t.Errorf("EncodeChannelRuntime = % x\n                       want % x", got, want)
	}
}

func TestChannelRowEntityDecodeLimits(t *testing.T) {
	over := strings.Repeat("x", meta.MaxKeyBytes+1)
	for name, err := range map[string]error{
		"membership uid":        errOf(meta.DecodeMembership(meta.EncodeMembership(&meta.Membership{UID: over}))),
		"membership channel id": errOf(meta.DecodeMembership(meta.EncodeMembership(&meta.Membership{ChannelID: over}))),
		"cmd binding channel":   errOf(meta.DecodeCmdBinding(meta.EncodeCmdBinding(&meta.CmdBinding{ChannelID: over}))),
		"runtime channel":       errOf(meta.DecodeChannelRuntime(meta.EncodeChannelRuntime(&meta.ChannelRuntime{ChannelID: over}))),
		"runtime replicas": errOf(meta.DecodeChannelRuntime(meta.EncodeChannelRuntime(
			&meta.ChannelRuntime{Replicas: make([]uint64, meta.MaxReplicas+1)}))),
		"runtime isr": errOf(meta.DecodeChannelRuntime(meta.EncodeChannelRuntime(
			&meta.ChannelRuntime{ISR: make([]uint64, meta.MaxReplicas+1)}))),
		"runtime fence token": errOf(meta.DecodeChannelRuntime(meta.EncodeChannelRuntime(
			&meta.ChannelRuntime{WriteFence: meta.WriteFence{Token: strings.Repeat("t", meta.MaxStringBytes+1)}}))),
		"event payload": errOf(meta.DecodeChannelEvent(meta.EncodeChannelEvent(
			&meta.ChannelEvent{Payload: binaryValue(meta.MaxEventPayloadBytes + 1)}))),
		"event id":     errOf(meta.DecodeChannelEvent(meta.EncodeChannelEvent(&meta.ChannelEvent{EventID: over}))),
		"task channel": errOf(meta.DecodeChannelTask(meta.EncodeChannelTask(&meta.ChannelTask{ChannelID: over}))),
		// A list length the bytes cannot hold.
		"runtime huge list": errOf(meta.DecodeChannelRuntime([]byte{1, 1, 1, 'c', 0, 0, 1, 0xFF, 0xFF, 0x03})),
	} {
		wantMalformed(t, name, err)
	}
}

func errOf[T any](_ T, err error) error { return err }

func hdrFor(key string) meta.Header {
	return meta.Header{HashSlot: slotstore.HashSlotOfString(key), TimeMs: 1_700_000_000_000, IdempotencyKey: "k-" + key}
}

func sampleChannelRowCommands() []meta.Command {
	uc := meta.UserChannel{UID: "u1", ChannelType: 2, ChannelID: "g1"}
	ref := meta.ChanRef{ChannelType: 2, ChannelID: "g1"}
	rt := *sampleRuntimes()[1]
	rt.CreatedAtMs, rt.UpdatedAtMs, rt.Revision = 0, 0, 0
	ev := *sampleEvents()[1]
	ev.Seq, ev.CreatedAtMs, ev.Revision = 0, 0, 0
	bigEv := ev
	bigEv.Payload = binaryValue(meta.MaxEventPayloadBytes)
	return []meta.Command{
		&meta.PutMembership{Header: hdrFor("u1"), UserChannel: uc, JoinSeq: 1, ReadSeq: 2, DeletedToSeq: 3,
			HasActivatedAt: true, ActivatedAtMs: 44, Tombstone: true},
		&meta.PutMembership{Header: meta.Header{HashSlot: slotstore.HashSlotOfString("用户")},
			UserChannel: meta.UserChannel{UID: "用户", ChannelType: 255, ChannelID: strings.Repeat("c", meta.MaxKeyBytes)}},
		&meta.DeleteMembership{Header: hdrFor("u1"), UserChannel: uc},
		&meta.ReadMembership{Header: hdrFor("u1"), UserChannel: uc, ReadSeq: math.MaxUint64},
		&meta.HideMembership{Header: hdrFor("u1"), UserChannel: uc, ToSeq: 300},
		&meta.ActivateMembership{Header: hdrFor("u1"), UserChannel: uc},
		&meta.PutCmdBinding{Header: hdrFor("u1"), UserChannel: uc, StartSeq: 9},
		&meta.DeleteCmdBinding{Header: hdrFor("u1"), UserChannel: uc},
		&meta.AckCmdBinding{Header: hdrFor("u1"), UserChannel: uc, AckSeq: 1 << 40},
		&meta.CreateRuntime{Header: hdrFor("g1"), Runtime: rt},
		&meta.PutRuntime{Header: hdrFor("g1"), Runtime: rt},
		&meta.PutRuntime{Header: hdrFor(""), Runtime: meta.ChannelRuntime{}},
		&meta.DeleteRuntime{Header: hdrFor("g1"), ChanRef: ref},
		&meta.AdvanceRetention{Header: hdrFor("g1"), ChanRef: ref, ExpectedChannelEpoch: 3, ExpectedLeader: 1, ThroughSeq: 500},
		&meta.CreateChannelTask{Header: hdrFor("g1"), ChanRef: ref, Kind: meta.ChannelReplicaMove, SourceNode: 1, TargetNode: 2},
		&meta.AdvanceChannelTask{Header: hdrFor("g1"), ChanRef: ref, TaskID: 7, ExpectedPhase: meta.PhaseCreated,
			Phase: meta.PhaseSwitching, Note: "skip copy"},
		&meta.AbortChannelTask{Header: hdrFor("g1"), ChanRef: ref, TaskID: 7, Note: "operator"},
		&meta.AbortChannelTask{Header: hdrFor("g1"), ChanRef: ref},
		&meta.AppendEvent{Header: hdrFor("g1"), Event: ev},
		&meta.AppendEvent{Header: hdrFor("g1"), Event: bigEv},
	}
}

func TestChannelRowCommandsRoundTrip(t *testing.T) {
	seen := map[meta.Op]bool{}
	for i, c := range sampleChannelRowCommands() {
		name := fmt.Sprintf("sample %d (%T)", i, c)
		enc := mustEncode(c)
		got := mustDecodeCommand(t, enc)
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("%s: round trip\n got %+v\nwant %+v", name, got, c)
		}
		if !bytes.Equal(mustEncode(got), enc) || meta.Fingerprint(got) != meta.Fingerprint(c) {
			t.Fatalf("%s: re-encoding or fingerprint differs", name)
		}
		if meta.Op(enc[1]) != c.Op() {
			t.Fatalf("%s: op byte %d, want %d", name, enc[1], c.Op())
		}
		seen[c.Op()] = true
		for cut := range len(enc) {
			if len(enc) > 4096 && cut > 1024 && cut < len(enc)-1024 && cut%997 != 0 {
				continue
			}
			_, err := meta.DecodeCommand(enc[:cut:cut])
			wantMalformed(t, fmt.Sprintf("%s cut %d/%d", name, cut, len(enc)), err)
		}
		for _, extra := range [][]byte{{0}, {0xFF}} {
			_, err := meta.DecodeCommand(cat(enc, extra))
			wantMalformed(t, name+" with a trailing byte", err)
		}
	}
	// The op numbers are the wire format: pinned, and inside the families' ranges.
	for op, want := range map[meta.Op]uint8{
		meta.OpPutMembership: 40, meta.OpDeleteMembership: 41, meta.OpReadMembership: 42, meta.OpHideMembership: 43,
		meta.OpActivateMembership: 44, meta.OpPutCmdBinding: 47, meta.OpDeleteCmdBinding: 48, meta.OpAckCmdBinding: 49,
		meta.OpCreateRuntime: 60, meta.OpPutRuntime: 61, meta.OpDeleteRuntime: 62, meta.OpAdvanceRetention: 63,
		meta.OpCreateChannelTask: 70, meta.OpAdvanceChannelTask: 71, meta.OpAbortChannelTask: 72, meta.OpAppendEvent: 80,
	} {
		if uint8(op) != want {
			t.Errorf("op %d, want %d", op, want)
		}
		if !seen[op] {
			t.Errorf("no sample of op %d", op)
		}
	}
}

func TestChannelRowCommandRouteKeys(t *testing.T) {
	uc := meta.UserChannel{UID: "the-user", ChannelType: 1, ChannelID: "the-channel"}
	ref := meta.ChanRef{ChannelType: 1, ChannelID: "the-channel"}
	for _, tc := range []struct {
		c   meta.Command
		key string
	}{
		{&meta.PutMembership{UserChannel: uc}, "the-user"},
		{&meta.ReadMembership{UserChannel: uc}, "the-user"},
		{&meta.AckCmdBinding{UserChannel: uc}, "the-user"},
		{&meta.PutRuntime{Runtime: meta.ChannelRuntime{ChannelType: 1, ChannelID: "the-channel"}}, "the-channel"},
		{&meta.AdvanceRetention{ChanRef: ref}, "the-channel"},
		{&meta.CreateChannelTask{ChanRef: ref}, "the-channel"},
		{&meta.AppendEvent{Event: meta.ChannelEvent{ChannelID: "the-channel"}}, "the-channel"},
	} {
		if got := tc.c.RouteKey(); got != tc.key {
			t.Errorf("%T route key %q, want %q", tc.c, got, tc.key)
		}
	}
}

func TestChannelRowCommandGoldenEncoding(t *testing.T) {
	c := &meta.ReadMembership{Header: meta.Header{HashSlot: 7, TimeMs: 1}, ReadSeq: 300,
		UserChannel: meta.UserChannel{UID: "u", ChannelType: 2, ChannelID: "c"}}
	want := []byte{1, 42, 0, 7, 2, 0, 1, 'u', 2, 1, 'c', 0xAC, 0x02}
	if got := mustEncode(c); !bytes.Equal(got, want) {
		t.Errorf("EncodeCommand(ReadMembership) = % x, want % x", got, want)
	}
	a := &meta.AdvanceChannelTask{Header: meta.Header{HashSlot: 1}, ChanRef: meta.ChanRef{ChannelType: 3, ChannelID: "c"},
		TaskID: 2, ExpectedPhase: meta.PhaseCreated, Phase: meta.PhaseDone, Note: "n"}
	want = []byte{1, 71, 0, 1, 0, 0, 3, 1, 'c', 2, 1, 5, 1, 'n'}
	if got := mustEncode(a); !bytes.Equal(got, want) {
		t.Errorf("EncodeCommand(AdvanceChannelTask) = % x, want % x", got, want)
	}
}

func TestChannelRowQueriesRoundTrip(t *testing.T) {
	uc := meta.UserChannel{UID: "u1", ChannelType: 2, ChannelID: "g1"}
	ref := meta.ChanRef{ChannelType: 2, ChannelID: "g1"}
	for _, q := range []meta.Query{
		&meta.GetMembership{HashSlot: 3, UserChannel: uc},
		&meta.ListMemberships{HashSlot: 255, UID: "u1", Limit: 10},
		&meta.ListMemberships{HashSlot: 0, UID: "u1", After: &meta.ActivityPos{AtMs: 1 << 40, ChannelType: 9, ChannelID: "z"}, Limit: 1000},
		&meta.GetCmdBinding{HashSlot: 4, UserChannel: uc},
		&meta.ListCmdBindings{HashSlot: 4, UID: "u1", HasAfter: true, AfterType: 2, AfterID: "g", Limit: 2},
		&meta.GetRuntime{HashSlot: 9, ChanRef: ref},
		&meta.GetChannelTask{HashSlot: 9, ChanRef: ref, TaskID: math.MaxUint64},
		&meta.ListChannelTasks{HashSlot: 9, ChanRef: ref, BeforeID: 5, Limit: 1},
		&meta.ListEvents{HashSlot: 9, ChanRef: ref, BeforeSeq: 77, Limit: 100},
	} {
		b := meta.EncodeQuery(q)
		got, err := meta.DecodeQuery(b)
		if err != nil || !reflect.DeepEqual(got, q) {
			t.Fatalf("%T: got %+v, %v", q, got, err)
		}
		for cut := range len(b) {
			_, err := meta.DecodeQuery(b[:cut:cut])
			wantMalformed(t, fmt.Sprintf("%T cut %d", q, cut), err)
		}
		_, err = meta.DecodeQuery(cat(b, []byte{0}))
		wantMalformed(t, fmt.Sprintf("%T with a trailing byte", q), err)
	}
	// A page limit past the decoder's bound.
	b := meta.EncodeQuery(&meta.ListEvents{HashSlot: 1, ChanRef: ref, Limit: 1})
	b = cat(b[:len(b)-1], binary.AppendUvarint(nil, 1<<40))
	_, err := meta.DecodeQuery(b)
	wantMalformed(t, "huge limit", err)
}

func TestChannelRowAnswersRoundTrip(t *testing.T) {
	for _, a := range []any{
		sampleMemberships()[1],
		&meta.MembershipPage{Items: sampleMemberships(), More: true},
		&meta.MembershipPage{},
		sampleCmdBindings()[1],
		&meta.CmdBindingPage{Items: sampleCmdBindings()[:2]},
		sampleRuntimes()[1],
		sampleTasks()[2],
		&meta.ChannelTaskPage{Items: sampleTasks(), More: true},
		&meta.EventPage{Items: sampleEvents()[:2], More: true, Count: 1000, LastSeq: 5000},
		&meta.EventPage{},
	} {
		b, err := meta.EncodeAnswer(a)
		if err != nil {
			t.Fatalf("%T: %v", a, err)
		}
		got, err := meta.DecodeAnswer(b)
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("%T: got %+v, %v", a, got, err)
		}
		for cut := range len(b) {
			_, err := meta.DecodeAnswer(b[:cut:cut])
			wantMalformed(t, fmt.Sprintf("%T cut %d", a, cut), err)
		}
	}
	for _, nilAns := range []any{(*meta.Membership)(nil), (*meta.CmdBinding)(nil), (*meta.ChannelRuntime)(nil), (*meta.ChannelTask)(nil)} {
		b, err := meta.EncodeAnswer(nilAns)
		if err != nil || len(b) != 2 {
			t.Fatalf("%T nil: % x, %v", nilAns, b, err)
		}
	}
	// A page claiming more items than its bytes hold.
	b, _ := meta.EncodeAnswer(&meta.EventPage{})
	b = cat(b[:2], binary.AppendUvarint(nil, 1<<30), b[3:])
	_, err := meta.DecodeAnswer(b)
	wantMalformed(t, "page with a huge count", err)
}

func TestChannelRefProblem(t *testing.T) {
	for _, tc := range []struct {
		typ uint8
		id  string
		ok  bool
	}{
		{1, "g", true}, {255, strings.Repeat("x", 128), true}, {2, "群-1", true},
		{0, "g", false}, {1, "", false}, {1, strings.Repeat("x", 129), false},
		{1, "a b", false}, {1, "a/b", false}, {1, "a\x00b", false}, {1, "\xff", false}, {1, "a\u3000b", false},
	} {
		if got := meta.ChannelRefProblem(tc.typ, tc.id) == ""; got != tc.ok {
			t.Errorf("ChannelRefProblem(%d, %q) ok=%v, want %v", tc.typ, tc.id, got, tc.ok)
		}
	}
}

func TestRuntimeProblems(t *testing.T) {
	good := func() *meta.ChannelRuntime {
		return &meta.ChannelRuntime{ChannelType: 1, ChannelID: "c", Leader: 2, Replicas: []uint64{1, 2, 3},
			ISR: []uint64{2, 3}, MinISR: 2, Status: meta.RuntimeActive}
	}
	if p := meta.RuntimeProblems(good()); p != nil {
		t.Fatalf("a good runtime: %v", p)
	}
	for name, tc := range map[string]struct {
		mod   func(*meta.ChannelRuntime)
		field string
	}{
		"no leader":           {func(r *meta.ChannelRuntime) { r.Leader = 0 }, "leader"},
		"leader not replica":  {func(r *meta.ChannelRuntime) { r.Leader = 9; r.ISR = []uint64{9} }, "leader"},
		"no replicas":         {func(r *meta.ChannelRuntime) { r.Replicas = nil }, "replicas"},
		"replica 0":           {func(r *meta.ChannelRuntime) { r.Replicas = []uint64{0, 2} }, "replicas"},
		"repeated replica":    {func(r *meta.ChannelRuntime) { r.Replicas = []uint64{2, 2} }, "replicas"},
		"too many replicas":   {func(r *meta.ChannelRuntime) { r.Replicas = make([]uint64, meta.MaxReplicas+1) }, "replicas"},
		"empty isr":           {func(r *meta.ChannelRuntime) { r.ISR = nil }, "isr"},
		"isr not subset":      {func(r *meta.ChannelRuntime) { r.ISR = []uint64{2, 7} }, "isr"},
		"isr without leader":  {func(r *meta.ChannelRuntime) { r.ISR = []uint64{3} }, "isr"},
		"repeated isr":        {func(r *meta.ChannelRuntime) { r.ISR = []uint64{2, 2} }, "isr"},
		"min isr 0":           {func(r *meta.ChannelRuntime) { r.MinISR = 0 }, "min_isr"},
		"min isr > replicas":  {func(r *meta.ChannelRuntime) { r.MinISR = 4 }, "min_isr"},
		"unknown status":      {func(r *meta.ChannelRuntime) { r.Status = 9 }, "status"},
		"negative lease":      {func(r *meta.ChannelRuntime) { r.LeaseUntilMs = -1 }, "lease_until_ms"},
		"fence without token": {func(r *meta.ChannelRuntime) { r.WriteFence.Version = 1 }, "write_fence.token"},
		"bad channel":         {func(r *meta.ChannelRuntime) { r.ChannelType = 0 }, "channel"},
	} {
		r := good()
		tc.mod(r)
		probs := meta.RuntimeProblems(r)
		found := false
		for _, p := range probs {
			found = found || p.Field == tc.field
		}
		if !found {
			t.Errorf("%s: problems %v, want one about %s", name, probs, tc.field)
		}
	}
}

func TestTaskPhases(t *testing.T) {
	order := []meta.TaskPhase{meta.PhaseCreated, meta.PhaseCopying, meta.PhaseCatchingUp, meta.PhaseSwitching, meta.PhaseDone}
	for i, from := range order {
		for j, to := range order {
			if got := meta.PhaseStepOK(from, to); got != (j > i) {
				t.Errorf("PhaseStepOK(%s, %s) = %v", from, to, got)
			}
		}
		if meta.PhaseStepOK(from, meta.PhaseAborted) || meta.PhaseStepOK(meta.PhaseAborted, from) {
			t.Errorf("a step to or from aborted from %s", from)
		}
	}
	for _, p := range append(order, meta.PhaseAborted) {
		if got, ok := meta.ParseTaskPhase(p.String()); !ok || got != p {
			t.Errorf("phase %d does not round-trip its name %q", p, p.String())
		}
	}
	if !meta.PhaseDone.Finished() || !meta.PhaseAborted.Finished() || meta.PhaseSwitching.Finished() {
		t.Error("Finished is wrong")
	}
	for _, k := range []meta.ChannelTaskKind{meta.ChannelReplicaMove, meta.ChannelLeaderTransfer} {
		if got, ok := meta.ParseChannelTaskKind(k.String()); !ok || got != k || !k.Valid() {
			t.Errorf("kind %d", k)
		}
	}
	for _, s := range []meta.RuntimeStatus{meta.RuntimeActive, meta.RuntimeMigrating, meta.RuntimeDeleting} {
		if got, ok := meta.ParseRuntimeStatus(s.String()); !ok || got != s {
			t.Errorf("status %d", s)
		}
	}
}

// FuzzDecodeChannelRows feeds arbitrary bytes to the entity decoders of
// this family and to DecodeCommand seeded with its commands: no panic, a
// failure is ErrMalformed, and whatever decodes re-encodes to something
// that decodes to the same value.
func FuzzDecodeChannelRows(f *testing.F) {
	for _, c := range sampleChannelRowCommands() {
		if b := mustEncode(c); len(b) < 4096 {
			f.Add(b)
		}
	}
	for _, m := range sampleMemberships() {
		f.Add(meta.EncodeMembership(m))
	}
	for _, r := range sampleRuntimes() {
		f.Add(meta.EncodeChannelRuntime(r))
	}
	for _, tk := range sampleTasks() {
		f.Add(meta.EncodeChannelTask(tk))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := meta.DecodeCommand(data); err == nil {
			c2, err := meta.DecodeCommand(mustEncode(c))
			if err != nil || !reflect.DeepEqual(c, c2) {
				t.Fatalf("command does not round-trip: %+v %v", c, err)
			}
		} else if !errors.Is(err, meta.ErrMalformed) {
			t.Fatalf("DecodeCommand: %v", err)
		}
		fuzzEntity(t, data, meta.EncodeMembership, meta.DecodeMembership)
		fuzzEntity(t, data, meta.EncodeCmdBinding, meta.DecodeCmdBinding)
		fuzzEntity(t, data, meta.EncodeChannelRuntime, meta.DecodeChannelRuntime)
		fuzzEntity(t, data, meta.EncodeChannelTask, meta.DecodeChannelTask)
		fuzzEntity(t, data, meta.EncodeChannelEvent, meta.DecodeChannelEvent)
	})
}

func fuzzEntity[T any](t *testing.T, data []byte, enc func(*T) []byte, dec func([]byte) (*T, error)) {
	v, err := dec(data)
	if err != nil {
		if v != nil || !errors.Is(err, meta.ErrMalformed) {
			t.Fatalf("%T: %v, %v", v, v, err)
		}
		return
	}
	again, err := dec(enc(v))
	if err != nil || !reflect.DeepEqual(again, v) {
		t.Fatalf("%T does not round-trip: %+v, %v", v, again, err)
	}
}
