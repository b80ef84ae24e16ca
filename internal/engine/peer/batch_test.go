package peer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestBatchAnswersRoundTrip: results, refusals with their hints and routes
// come back as they were sent, one per command, in order.
func TestBatchAnswersRoundTrip(t *testing.T) {
	route := slotstore.Route{HashSlot: 7, GroupID: 2, LeaderNodeID: 3, LeaderTerm: 9, ConfigEpoch: 4, RouteRevision: 5}
	outs := []fwdOutcome{
		{res: meta.Result{Revision: 12, Value: []byte("v")}, route: route},
		{err: &slotstore.Error{Code: slotstore.CodeNotLeader, Message: "no", LeaderHint: 2, LeaderTerm: 10, RetryAfter: 200 * time.Millisecond}, route: route},
		{res: meta.Result{Code: slotstore.CodeConflict, Message: "exists", Revision: 3}},
	}
	got, err := decodeBatchAnswers(encodeBatchAnswers(outs), len(outs))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[0], outs[0]) || !reflect.DeepEqual(got[2], outs[2]) {
		t.Fatalf("results: %+v", got)
	}
	var se *slotstore.Error
	if !errors.As(got[1].err, &se) || se.Code != slotstore.CodeNotLeader || se.LeaderHint != 2 || se.LeaderTerm != 10 ||
		se.RetryAfter != 200*time.Millisecond || got[1].route != route {
		t.Fatalf("refusal: %+v %+v", got[1].err, got[1].route)
	}
	if _, err := decodeBatchAnswers(encodeBatchAnswers(outs), 2); err == nil {
		t.Fatal("a count mismatch was accepted")
	}
	b := encodeBatchAnswers(outs)
	for cut := 0; cut < len(b); cut++ {
		if _, err := decodeBatchAnswers(b[:cut], len(outs)); err == nil {
			t.Fatalf("an answer cut at %d of %d bytes was accepted", cut, len(b))
		}
	}
}

// TestBatchCommandsBounds: the server takes 1..forwardBatchMax commands and
// refuses truncated or trailing bytes.
func TestBatchCommandsBounds(t *testing.T) {
	enc := func(n int) []byte {
		var cmds [][]byte
		for i := 0; i < n; i++ {
			cmds = append(cmds, mustEncode(&meta.PutKV{Key: "k", Value: []byte{byte(i)}}))
		}
		var b []byte
		b = appendBatch(b, cmds)
		return b
	}
	if cmds, err := decodeBatchCommands(enc(3)); err != nil || len(cmds) != 3 {
		t.Fatalf("3 commands: %d %v", len(cmds), err)
	}
	for name, b := range map[string][]byte{
		"empty": enc(0), "too many": enc(forwardBatchMax + 1), "truncated": enc(2)[:10], "trailing": append(enc(1), 0),
	} {
		if _, err := decodeBatchCommands(b); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
}

// mustEncode encodes a command the test knows is within every codec limit.
func mustEncode(c meta.Command) []byte {
	b, err := meta.EncodeCommand(c)
	if err != nil {
		panic(err)
	}
	return b
}
