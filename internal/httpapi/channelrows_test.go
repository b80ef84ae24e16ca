package httpapi

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestChannelRowLimitsFitTheCodec keeps the validate tags of the
// membership, runtime, migration and event requests within what the codec
// and the appliers accept, so a validated request always applies.
func TestChannelRowLimitsFitTheCodec(t *testing.T) {
	for _, c := range []struct {
		typ   any
		field string
		limit int
	}{
		{eventRequest{}, "ClientMsgNo", meta.MaxEventIDBytes},
		{eventRequest{}, "EventKey", meta.MaxEventIDBytes},
		{eventRequest{}, "EventID", meta.MaxEventIDBytes},
		{eventRequest{}, "EventType", meta.MaxEventTypeBytes},
		{eventRequest{}, "Status", meta.MaxEventTypeBytes},
		{eventRequest{}, "Payload", meta.MaxEventPayloadBytes},
		{writeFenceJSON{}, "Token", meta.MaxFenceTokenBytes},
		{writeFenceJSON{}, "Reason", meta.MaxFenceReasonBytes},
		{migrationAdvance{}, "Note", meta.MaxTaskNoteBytes},
		{migrationAbort{}, "Note", meta.MaxTaskNoteBytes},
	} {
		f, _ := reflect.TypeOf(c.typ).FieldByName(c.field)
		_, n, ok := strings.Cut(f.Tag.Get("validate"), "maxbytes=")
		n, _, _ = strings.Cut(n, ",")
		max, err := strconv.Atoi(n)
		if !ok || err != nil || max > c.limit {
			t.Errorf("%T.%s: maxbytes %q over the codec's %d", c.typ, c.field, n, c.limit)
		}
	}
	if meta.MaxChannelIDBytes > meta.MaxKeyBytes {
		t.Error("channel ids over the codec's key limit")
	}
	f, _ := reflect.TypeOf(runtimeRequest{}).FieldByName("Replicas")
	if !strings.Contains(f.Tag.Get("validate"), "max="+strconv.Itoa(meta.MaxReplicas)) {
		t.Errorf("replicas are not bounded by meta.MaxReplicas: %q", f.Tag.Get("validate"))
	}
}

func TestChannelIdentityParsing(t *testing.T) {
	for s, want := range map[string]int{
		"1": 1, "255": 255, "9": 9,
		"0": -1, "256": -1, "01": -1, "+1": -1, "-1": -1, "": -1, "x": -1, "1.0": -1, " 1": -1,
	} {
		got, ok := parseChannelType(s)
		if (want < 0) == ok || (ok && int(got) != want) {
			t.Errorf("parseChannelType(%q) = %d, %v", s, got, ok)
		}
	}
	for id, ok := range map[string]bool{
		"g": true, "群组-1": true, strings.Repeat("x", 128): true, "a.b": true,
		"": false, ".": false, "..": false, strings.Repeat("x", 129): false, "a b": false, "a/b": false,
		"a\tb": false, "\xff": false, "a\u00a0b": false,
	} {
		if got := channelIDProblem(id) == ""; got != ok {
			t.Errorf("channelIDProblem(%q) ok=%v, want %v", id, got, ok)
		}
	}
}

func TestKeyedCursors(t *testing.T) {
	m := &meta.Membership{ActivatedAtMs: 1_700_000_000_000, ChannelType: 7, ChannelID: strings.Repeat("c", 128)}
	c := membershipCursor(m)
	if len(c) > 176*2 {
		t.Fatalf("cursor of %d characters", len(c))
	}
	p, err := parseMembershipCursor(c)
	if err != nil || p.AtMs != m.ActivatedAtMs || p.ChannelType != 7 || p.ChannelID != m.ChannelID {
		t.Fatalf("membership cursor: %+v, %v", p, err)
	}
	if p, err := parseMembershipCursor(""); p != nil || err != nil {
		t.Fatalf("empty cursor: %+v, %v", p, err)
	}
	n, err := parseSeqCursor(seqCursor(tagEvents, 42), tagEvents)
	if err != nil || n != 42 {
		t.Fatalf("seq cursor: %d, %v", n, err)
	}
	// A cursor of one listing is not another's; garbage is refused.
	for _, bad := range []string{
		seqCursor(tagMigrations, 42), seqCursor(tagEvents, 1), seqCursor(tagEvents, 0), "AAAA", "!!", strings.Repeat("A", 900),
		packCursor(tagEvents, []byte{0x80}), packCursor(tagEvents, []byte{2, 0}),
	} {
		if _, err := parseSeqCursor(bad, tagEvents); err == nil {
			t.Errorf("seq cursor %q accepted", bad)
		}
	}
	for _, bad := range []string{
		seqCursor(tagEvents, 5), packCursor(tagMemberships, []byte{2}), packCursor(tagMemberships, []byte{2, 0}),
		packCursor(tagMemberships, []byte{2, 1, 'a', ' '}), packCursor(tagMemberships, []byte{1, 1}),
	} {
		if _, err := parseMembershipCursor(bad); err == nil {
			t.Errorf("membership cursor %q accepted", bad)
		}
	}
}
