package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Read indexes asked of a leader node, batched across groups.
//
// A follower's linearizable read needs the index its replica must have
// applied: everything committed when the read arrived. A leader under its
// lease (ADR 0012) knows it without a heartbeat round, so a follower asks
// the leader's node over peer RPC instead of running dragonboat's ReadIndex
// (a message to the leader and a heartbeat round of the leader's with every
// follower, per group). With many groups every group has about one read in
// flight, so the questions of all groups led by one node share a request:
// a node keeps, per peer, a bounded queue and at most readIndexInFlight
// requests out; a question that finds a free slot leaves at once, the ones
// that arrive meanwhile leave together in the next request. The leader
// answers each group with the index or a refusal (not the leader, no valid
// lease, no time), and the follower falls back to a ReadIndex round on any
// refusal or error: nothing here is needed for safety but the leader's lease.
//
// Wire format: the request is a uvarint count and that many uvarint group
// ids; the answer is the same count and, per group, a uvarint: the index
// plus one, or 0 for a refusal.
const (
	readIndexInFlight = 2    // requests out per peer
	readIndexQueue    = 4096 // questions waiting per peer
	readIndexBatchMax = 256  // groups per request
)

type riReq struct {
	ctx  context.Context
	g    slotstore.GroupID
	done chan riOutcome // buffered(1)
}

func (r *riReq) context() context.Context { return r.ctx }

type riOutcome struct {
	index uint64
	err   error
}

// riBatcher batches the read-index questions to one peer address.
type riBatcher struct {
	c    *Client
	addr string
	sendQueue[*riReq]
}

// ErrReadIndexRefused: the leader's node did not answer for the group (it
// does not lead it, holds no valid lease, or ran out of time).
var ErrReadIndexRefused = errors.New("the leader's node gave no read index")

// ReadIndex asks the node at addr, which leads group g, for the index a
// replica of g must have applied to answer a read that arrived before the
// call, batched with the questions to addr of other groups.
func (c *Client) ReadIndex(ctx context.Context, addr string, g slotstore.GroupID) (uint64, error) {
	b := queueFor(&c.mu, c.readIndexes, addr, func() *riBatcher { return &riBatcher{c: c, addr: addr} })
	r := &riReq{ctx: ctx, g: g, done: make(chan riOutcome, 1)}
	b.mu.Lock()
	queued := b.pushLocked(r, readIndexQueue, readIndexInFlight, b.send)
	b.mu.Unlock()
	if !queued {
		return 0, &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: 100 * time.Millisecond,
			Message: fmt.Sprintf("%d read-index questions already wait for %s", readIndexQueue, addr)}
	}
	select {
	case o := <-r.done:
		return o.index, o.err
	case <-ctx.Done():
		return 0, ctx.Err() // a sender that takes it later answers into the buffer
	}
}

// send sends requests until the queue is empty.
func (b *riBatcher) send() {
	for {
		batch, ok := b.nextBatch(func(r *riReq, batch []*riReq) pick {
			if r.ctx.Err() != nil {
				r.done <- riOutcome{err: r.ctx.Err()}
				return pickDrop
			}
			if len(batch) == readIndexBatchMax {
				return pickStop
			}
			return pickTake
		})
		if !ok {
			return
		}
		b.ask(batch)
	}
}

// ask sends one request and answers its questions.
func (b *riBatcher) ask(batch []*riReq) {
	groups := make([]slotstore.GroupID, len(batch))
	for i, r := range batch {
		groups[i] = r.g
	}
	ctx, cancel := context.WithDeadline(context.Background(), batchDeadline(batch, (*riReq).context, time.Second))
	defer cancel()
	answer := func(err error) {
		for _, r := range batch {
			r.done <- riOutcome{err: err}
		}
	}
	resp, _, err := b.c.Call(ctx, http.MethodPost, b.addr, "readindex", AppendReadIndexGroups(nil, groups), nil)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		answer(err)
		return
	}
	raw, err := ReadBody(resp)
	if err != nil {
		answer(err)
		return
	}
	idx, err := DecodeReadIndexAnswers(raw, len(batch))
	if err != nil {
		answer(err)
		return
	}
	for i, r := range batch {
		if idx[i] == 0 {
			r.done <- riOutcome{err: ErrReadIndexRefused}
			continue
		}
		r.done <- riOutcome{index: idx[i] - 1}
	}
}

var errReadIndexFrame = errors.New("malformed read-index frame")

// AppendReadIndexGroups appends the request body for groups.
func AppendReadIndexGroups(b []byte, groups []slotstore.GroupID) []byte {
	b = binary.AppendUvarint(b, uint64(len(groups)))
	for _, g := range groups {
		b = binary.AppendUvarint(b, uint64(g))
	}
	return b
}

// DecodeReadIndexGroups decodes a request body: 1 to readIndexBatchMax
// groups, nothing after them.
func DecodeReadIndexGroups(b []byte) ([]slotstore.GroupID, error) {
	vals, err := decodeUvarints(b, 0)
	if err != nil {
		return nil, err
	}
	out := make([]slotstore.GroupID, len(vals))
	for i, v := range vals {
		if v == 0 || v > uint64(^uint32(0)) {
			return nil, errReadIndexFrame
		}
		out[i] = slotstore.GroupID(v)
	}
	return out, nil
}

// AppendReadIndexAnswers appends the answer body: per group the index plus
// one, 0 for a refusal.
func AppendReadIndexAnswers(b []byte, answers []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(answers)))
	for _, a := range answers {
		b = binary.AppendUvarint(b, a)
	}
	return b
}

// DecodeReadIndexAnswers decodes an answer body of want answers.
func DecodeReadIndexAnswers(b []byte, want int) ([]uint64, error) {
	return decodeUvarints(b, want)
}

// decodeUvarints decodes a count (want, or 1..readIndexBatchMax when want
// is 0) and that many uvarints, with nothing after them.
func decodeUvarints(b []byte, want int) ([]uint64, error) {
	rd := bytes.NewReader(b)
	n, err := binary.ReadUvarint(rd)
	switch {
	case err != nil:
		return nil, errReadIndexFrame
	case want != 0 && n != uint64(want):
		return nil, fmt.Errorf("%w: %d answers for %d groups", errReadIndexFrame, n, want)
	case want == 0 && (n == 0 || n > readIndexBatchMax):
		return nil, fmt.Errorf("%w: %d groups", errReadIndexFrame, n)
	}
	out := make([]uint64, n)
	for i := range out {
		if out[i], err = binary.ReadUvarint(rd); err != nil {
			return nil, errReadIndexFrame
		}
	}
	if _, err := rd.ReadByte(); !errors.Is(err, io.EOF) {
		return nil, errReadIndexFrame
	}
	return out, nil
}
