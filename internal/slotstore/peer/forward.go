package cluster

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
	"sync/atomic"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// Forwarded writes to one peer share peer requests.
//
// A write that reaches a node which does not lead its group is forwarded to
// the leader over peer RPC. One HTTP exchange per write cost more server CPU
// than the write itself (bench/README.md: 0.50 vs 0.28 ms per write sent to
// followers vs to the leader), so a node keeps, per peer, a bounded queue of
// forwarded commands and at most forwardInFlight batch requests out: a
// command that finds a free slot leaves at once (alone, through the plain
// propose endpoint), commands that arrive while the slots are busy leave
// together in the next request (propose-batch). The leader serves each
// command of a batch exactly as it serves a single one — concurrently,
// through its own proposer, refusing with a hint what it does not lead — and
// answers each with its own result or error. What the caller is told is
// unchanged: a definite refusal, a result, or, if the connection breaks
// after the request left, "may or may not have been applied".
//
// Concurrency contract: forward may be called from any goroutine; a
// forwarder's send goroutines (at most forwardInFlight) are started by
// callers and exit when the queue is empty.
const (
	forwardInFlight   = 4         // batch requests out per peer
	forwardQueue      = 4096      // commands waiting per peer
	forwardBatchMax   = 128       // commands per batch request
	forwardBatchBytes = 512 << 10 // command bytes per batch request
)

type fwdOutcome struct {
	res   meta.Result
	route slotstore.Route
	err   error
	sent  bool // the command may have reached the leader
}

// A queued command is taken by one sender or abandoned, never both.
const (
	reqQueued    int32 = iota
	reqTaken           // in a request that left (or is leaving)
	reqAbandoned       // never sent: its caller gave up, or its deadline passed in the queue
)

type fwdReq struct {
	ctx   context.Context
	cmd   []byte
	state atomic.Int32
	done  chan fwdOutcome // buffered(1): a sender never blocks on a caller
}

// forwarder batches the forwarded commands to one peer address.
type forwarder struct {
	c    *peerClient
	addr string

	mu      sync.Mutex
	queue   []*fwdReq
	running int
}

// ForwardStats returns how many batch requests this node sent to leaders
// and how many forwarded commands they carried (single forwards excluded).
func (n *Node) ForwardStats() (batches, commands uint64) {
	return n.peers.batches.Load(), n.peers.batched.Load()
}

// ForwardSingles returns how many forwarded commands left alone, one per
// peer request.
func (n *Node) ForwardSingles() uint64 { return n.peers.singles.Load() }

// forward sends an encoded command to the leader at addr and waits for its
// result, batched with other commands forwarded to addr meanwhile. sent
// reports whether the command may have reached the leader (false: an error
// is a definite "not proposed there"). A caller whose ctx ends, or whose
// moved closes, while its command is still queued takes it out: it is never
// sent. (moved may be nil.)
func (c *peerClient) forward(ctx context.Context, addr string, cmd []byte, moved <-chan struct{}) (meta.Result, slotstore.Route, bool, error) {
	c.mu.Lock()
	f := c.forwarders[addr]
	if f == nil {
		f = &forwarder{c: c, addr: addr}
		c.forwarders[addr] = f
	}
	c.mu.Unlock()
	f.mu.Lock()
	if len(f.queue) == 0 && f.running == 0 {
		// Nothing waits and nothing is out: this one goes alone, from the
		// caller's goroutine; under load writes queue and leave in batches.
		f.running++
		f.mu.Unlock()
		f.c.singles.Add(1)
		res, route, sent, err := f.c.proposeTo(ctx, f.addr, cmd, 0)
		f.mu.Lock()
		f.running--
		if len(f.queue) > 0 && f.running < forwardInFlight {
			f.running++ // writes queued meanwhile behind this one
			go f.send()
		}
		f.mu.Unlock()
		return res, route, sent, err
	}
	r := &fwdReq{ctx: ctx, cmd: cmd, done: make(chan fwdOutcome, 1)}
	if len(f.queue) >= forwardQueue {
		f.mu.Unlock()
		return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: 100 * time.Millisecond,
			Message: fmt.Sprintf("%d writes already wait to be forwarded to %s", forwardQueue, addr)}
	}
	f.queue = append(f.queue, r)
	if f.running < forwardInFlight {
		f.running++
		go f.send()
	}
	f.mu.Unlock()
	for {
		select {
		case o := <-r.done:
			return o.res, o.route, o.sent, o.err
		case <-moved:
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
				return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeRouteNotReady,
					Message: "the group's leader moved before the write was forwarded; not sent"}
			}
			moved = nil // sent already: wait for its answer (or ctx)
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) || r.state.Load() == reqAbandoned {
				return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
					Message: "deadline passed before the write was forwarded; not sent"}
			}
			return meta.Result{}, slotstore.Route{}, true, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
				Message: "deadline passed while forwarding to the leader; the write may or may not have been applied"}
		}
	}
}

// send sends batches until the queue is empty.
func (f *forwarder) send() {
	for {
		f.mu.Lock()
		var batch []*fwdReq
		bytes := 0
		rest := f.queue[:0]
		for i, r := range f.queue {
			if r.ctx.Err() != nil || r.state.Load() != reqQueued {
				if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
					r.done <- fwdOutcome{err: &slotstore.Error{Code: slotstore.CodeTimeout, Err: r.ctx.Err(),
						Message: "deadline passed before the write was forwarded; not sent"}}
				}
				continue
			}
			if len(batch) == forwardBatchMax || (len(batch) > 0 && bytes+len(r.cmd) > forwardBatchBytes) {
				rest = append(rest, f.queue[i:]...)
				break
			}
			if !r.state.CompareAndSwap(reqQueued, reqTaken) {
				continue // its caller gave up this moment
			}
			batch = append(batch, r)
			bytes += len(r.cmd)
		}
		clear(f.queue[len(rest):])
		f.queue = rest
		if len(batch) == 0 {
			f.running--
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if len(batch) == 1 {
			r := batch[0]
			f.c.singles.Add(1)
			res, route, sent, err := f.c.proposeTo(r.ctx, f.addr, r.cmd, 0)
			r.done <- fwdOutcome{res: res, route: route, err: err, sent: sent}
			continue
		}
		f.sendBatch(batch)
	}
}

// sendBatch sends one propose-batch request and answers its commands.
func (f *forwarder) sendBatch(batch []*fwdReq) {
	latest := time.Time{}
	cmds := make([][]byte, len(batch))
	for i, r := range batch {
		if d, ok := r.ctx.Deadline(); ok && d.After(latest) {
			latest = d
		}
		cmds[i] = r.cmd
	}
	body := appendBatch(nil, cmds)
	if latest.IsZero() {
		latest = time.Now().Add(5 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), latest)
	defer cancel()
	answer := func(o fwdOutcome) {
		for _, r := range batch {
			r.done <- o
		}
	}
	f.c.batches.Add(1)
	f.c.batched.Add(uint64(len(batch)))
	resp, sent, err := f.c.call(ctx, http.MethodPost, f.addr, "propose-batch", body, nil)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if sent && resp == nil {
			answer(fwdOutcome{sent: true, err: &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, RetryAfter: time.Second,
				Message: "lost the connection to the leader; the write may or may not have been applied"}})
			return
		}
		answer(fwdOutcome{err: err}) // a definite refusal of the whole request: nothing was proposed
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4*meta.MaxEntryBytes+1))
	if err != nil {
		answer(fwdOutcome{sent: true, err: &slotstore.Error{Code: slotstore.CodeTimeout, Err: err,
			Message: "lost the leader's answer; the write may or may not have been applied"}})
		return
	}
	outs, err := decodeBatchAnswers(raw, len(batch))
	if err != nil {
		answer(fwdOutcome{sent: true, err: slotstore.Wrap(slotstore.CodeInternal, err, "undecodable batch answer from the leader")})
		return
	}
	for i, r := range batch {
		outs[i].sent = true
		r.done <- outs[i]
	}
}

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
			body, _ = json.Marshal(toPeerError(o.err))
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
			var pe peerError
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

// servePeerProposeBatch serves a propose-batch request: every command as
// servePeerPropose serves one, concurrently, each answered on its own.
func (n *Node) servePeerProposeBatch(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writePeerError(w, http.StatusRequestEntityTooLarge, slotstore.Wrap(slotstore.CodePayloadTooLarge, err, "peer request body"))
		return
	}
	cmds, err := decodeBatchCommands(body)
	if err != nil {
		writePeerError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "undecodable batch"))
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
			outs[i].res, outs[i].route, outs[i].err = n.proposeLocal(ctx, cmd)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i].res, outs[i].route, outs[i].err = n.proposeLocal(ctx, cmd)
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
