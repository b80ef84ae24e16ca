package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Batch answers: count, then per command its route (six uvarints), a kind
// byte (0 result, 1 error) and a length-prefixed body (an encoded result,
// or the JSON error envelope of peer RPC).
func encodeBatchAnswers(outs []fwdOutcome) []byte {
	b := binary.AppendUvarint(nil, uint64(len(outs)))
	for _, o := range outs {
		r := o.route
		for _, v := range []uint64{uint64(r.HashSlot), uint64(r.GroupID), uint64(r.LeaderNodeID), r.LeaderTerm, r.ConfigEpoch, r.RouteRevision} {
			b = binary.AppendUvarint(b, v)
		}
		var body []byte
		if o.err != nil {
			body, _ = json.Marshal(toEnvelope(o.err))
			b = append(b, 1)
		} else {
			body = meta.EncodeResult(&o.res)
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
	}
	return b
}

var errBatchAnswer = errors.New("malformed batch answer")

func decodeBatchAnswers(b []byte, want int) ([]fwdOutcome, error) {
	rd := bytes.NewReader(b)
	n, err := binary.ReadUvarint(rd)
	if err != nil || n != uint64(want) {
		return nil, fmt.Errorf("%w: %d answers for %d commands", errBatchAnswer, n, want)
	}
	outs := make([]fwdOutcome, want)
	for i := range outs {
		var v [6]uint64
		for j := range v {
			if v[j], err = binary.ReadUvarint(rd); err != nil {
				return nil, errBatchAnswer
			}
		}
		outs[i].route = slotstore.Route{HashSlot: slotstore.HashSlot(v[0]), GroupID: slotstore.GroupID(v[1]),
			LeaderNodeID: slotstore.NodeID(v[2]), LeaderTerm: v[3], ConfigEpoch: v[4], RouteRevision: v[5]}
		kind, err := rd.ReadByte()
		if err != nil {
			return nil, errBatchAnswer
		}
		size, err := binary.ReadUvarint(rd)
		if err != nil || size > uint64(rd.Len()) {
			return nil, errBatchAnswer
		}
		body := make([]byte, size)
		_, _ = io.ReadFull(rd, body)
		switch kind {
		case 0:
			if outs[i].res, err = meta.DecodeResult(body); err != nil {
				return nil, fmt.Errorf("%w: %v", errBatchAnswer, err)
			}
		case 1:
			var pe envelope
			if err := json.Unmarshal(body, &pe); err != nil || pe.Code == "" {
				return nil, errBatchAnswer
			}
			outs[i].err = pe.err()
		default:
			return nil, errBatchAnswer
		}
	}
	if rd.Len() != 0 {
		return nil, errBatchAnswer
	}
	return outs, nil
}

// ServeProposeBatch serves a propose-batch request: every command as the
// propose endpoint serves one (propose), concurrently, each answered on its
// own.
func ServeProposeBatch(ctx context.Context, w http.ResponseWriter, r *http.Request,
	propose func(ctx context.Context, cmd meta.Command, enc []byte) (meta.Result, slotstore.Route, error)) {
	cmds, _, ok := ReadRequest(w, r.Body, "batch", decodeBatchCommands)
	if !ok {
		return
	}
	outs := make([]fwdOutcome, len(cmds))
	var wg sync.WaitGroup
	for i, raw := range cmds {
		cmd, err := meta.DecodeCommand(raw)
		if err == nil {
			if _, slotCmd := cmd.(meta.SlotCommand); slotCmd {
				err = errors.New("a hash-slot migration command cannot be batched")
			}
		}
		if err != nil {
			outs[i].err = slotstore.Wrap(slotstore.CodeInvalidArgument, err, "undecodable command")
			continue
		}
		if i == len(cmds)-1 {
			// The last one on this goroutine: a batch of one (the common
			// case at low load) costs no hand-off.
			outs[i].res, outs[i].route, outs[i].err = propose(ctx, cmd, raw)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i].res, outs[i].route, outs[i].err = propose(ctx, cmd, raw)
		}()
	}
	wg.Wait()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(encodeBatchAnswers(outs))
}

// appendBatch appends a propose-batch body: count, then each command
// length-prefixed.
func appendBatch(b []byte, cmds [][]byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

func decodeBatchCommands(b []byte) ([][]byte, error) {
	rd := bytes.NewReader(b)
	n, err := binary.ReadUvarint(rd)
	if err != nil || n == 0 || n > forwardBatchMax {
		return nil, fmt.Errorf("a batch holds 1..%d commands", forwardBatchMax)
	}
	cmds := make([][]byte, 0, n)
	for range n {
		size, err := binary.ReadUvarint(rd)
		if err != nil || size > uint64(rd.Len()) {
			return nil, errors.New("truncated batch")
		}
		c := make([]byte, size)
		_, _ = io.ReadFull(rd, c)
		cmds = append(cmds, c)
	}
	if rd.Len() != 0 {
		return nil, errors.New("trailing bytes after the batch")
	}
	return cmds, nil
}
