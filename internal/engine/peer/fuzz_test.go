package peer

import (
	"bytes"
	"net/http"
	"reflect"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The propose-batch framing decodes bytes from another process: a request
// body on the server, an answer body on the client. Whatever arrives, the
// decoders return an error or frames that re-encode to the same bytes; they
// never panic and never allocate past what the input holds. Seeds are here
// and in testdata/fuzz.

func FuzzDecodeBatchCommands(f *testing.F) {
	f.Add(appendBatch(nil, [][]byte{mustEncode(&meta.PutKV{Key: "k", Value: []byte("v")})}))
	f.Add(appendBatch(nil, [][]byte{{}, {1, 2, 3}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		cmds, err := decodeBatchCommands(b)
		if err != nil {
			return
		}
		if len(cmds) == 0 || len(cmds) > forwardBatchMax {
			t.Fatalf("accepted a batch of %d", len(cmds))
		}
		if again := appendBatch(nil, cmds); !bytes.Equal(again, b) {
			// Uvarints have one shortest form; a longer one decodes but
			// re-encodes shorter. Decode the re-encoding instead.
			back, err := decodeBatchCommands(again)
			if err != nil || !reflect.DeepEqual(back, cmds) {
				t.Fatalf("re-encoded batch decodes to %v, %v", back, err)
			}
		}
	})
}

func FuzzDecodeBatchAnswers(f *testing.F) {
	route := slotstore.Route{HashSlot: 7, GroupID: 2, LeaderNodeID: 3, LeaderTerm: 9, ConfigEpoch: 4, RouteRevision: 5}
	f.Add(encodeBatchAnswers([]fwdOutcome{{res: meta.Result{Revision: 1, Value: []byte("x")}, route: route}}), 1)
	f.Add(encodeBatchAnswers([]fwdOutcome{
		{err: &slotstore.Error{Code: slotstore.CodeNotLeader, Message: "m", LeaderHint: 2}},
		{res: meta.Result{Code: slotstore.CodeConflict, Message: "exists"}},
	}), 2)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 1, 2, '{', '}'}, 1)
	f.Fuzz(func(t *testing.T, b []byte, want int) {
		if want < 0 || want > forwardBatchMax {
			return // the client only ever asks for the count it sent
		}
		outs, err := decodeBatchAnswers(b, want)
		if err != nil {
			return
		}
		if len(outs) != want {
			t.Fatalf("%d answers for %d commands", len(outs), want)
		}
		for i, o := range outs {
			if o.err != nil && slotstore.ErrorCode(o.err) == "" {
				t.Fatalf("answer %d: an error without a code", i)
			}
		}
		back, err := decodeBatchAnswers(encodeBatchAnswers(outs), want)
		if err != nil || len(back) != want {
			t.Fatalf("re-encoded answers: %d, %v", len(back), err)
		}
	})
}

// The read-index framing (readindex.go): a request body on the server, an
// answer body on the client.
func FuzzDecodeReadIndex(f *testing.F) {
	f.Add(AppendReadIndexGroups(nil, []slotstore.GroupID{1, 2, 300}), 0)
	f.Add(AppendReadIndexAnswers(nil, []uint64{0, 1, 1 << 40}), 3)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 0)
	f.Add([]byte{1, 0}, 0)
	f.Fuzz(func(t *testing.T, b []byte, want int) {
		if groups, err := DecodeReadIndexGroups(b); err == nil {
			if len(groups) == 0 || len(groups) > readIndexBatchMax {
				t.Fatalf("accepted %d groups", len(groups))
			}
			for _, g := range groups {
				if g == 0 {
					t.Fatal("accepted group 0")
				}
			}
			if back, err := DecodeReadIndexGroups(AppendReadIndexGroups(nil, groups)); err != nil || !reflect.DeepEqual(back, groups) {
				t.Fatalf("re-encoded groups decode to %v, %v", back, err)
			}
		}
		if want <= 0 || want > readIndexBatchMax {
			return // the client asks for the count it sent
		}
		if answers, err := DecodeReadIndexAnswers(b, want); err == nil {
			if len(answers) != want {
				t.Fatalf("%d answers for %d", len(answers), want)
			}
			if back, err := DecodeReadIndexAnswers(AppendReadIndexAnswers(nil, answers), want); err != nil || !reflect.DeepEqual(back, answers) {
				t.Fatalf("re-encoded answers decode to %v, %v", back, err)
			}
		}
	})
}

// FuzzDecodeFrame: a peer stream's frames come from another process.
// Whatever arrives decodes to an error or to a frame that encodes and
// decodes again to the same frame.
func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range []*frame{
		{kind: frameRequest, id: 1, method: "POST", path: Prefix + "propose?x=1", header: http.Header{hdrSecret: {"s"}, HdrGroup: {"2"}}, body: []byte("cmd")},
		{kind: frameResponse, id: 1, status: 503, header: http.Header{"Content-Type": {"application/json"}}, body: []byte(`{"code":"busy"}`)},
		{kind: framePing, id: 0},
	} {
		b, err := appendFrame(nil, fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[4:])
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 9, 0xff, 'P'})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := decodeFrame(b)
		if err != nil {
			return
		}
		again, err := appendFrame(nil, fr)
		if err != nil {
			t.Fatalf("a decoded frame does not encode: %v (%+v)", err, fr)
		}
		back, err := decodeFrame(again[4:])
		if err != nil || !reflect.DeepEqual(back, fr) {
			t.Fatalf("re-encoded frame decodes to %+v, %v; was %+v", back, err, fr)
		}
	})
}
