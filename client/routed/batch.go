package routed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/slotmeta/slotmeta/client"
)

// MaxBatch is the most keys or operations one batch call takes (the
// server's bound; it answers 413 above it).
const MaxBatch = 1000

// ErrBatchTooLarge refuses a batch over MaxBatch before anything is sent.
var ErrBatchTooLarge = fmt.Errorf("routed: a batch holds at most %d keys or operations", MaxBatch)

// part is the share of a batch that goes to one node: the positions of
// its keys in the batch. node is nil for the keys whose leader is unknown
// (any node takes them and asks the leaders itself).
type part struct {
	node *url.URL
	at   []int
}

// split groups keys by the node that leads their group, in one pass over
// one view: a batch becomes one request per leader node.
func (c *Client) split(keys func(i int) string, n int) []part {
	t := c.view.load()
	byHost := map[string]*part{}
	var parts []*part
	for i := range n {
		var u *url.URL
		if node, _ := t.leaderOf(slotOf(keys(i))); node != 0 && t.nodes[node] != nil && !c.isDown(t.nodes[node].Host) {
			u = t.nodes[node]
		}
		host := ""
		if u != nil {
			host = u.Host
		}
		p := byHost[host]
		if p == nil {
			p = &part{node: u}
			byHost[host] = p
			parts = append(parts, p)
		}
		p.at = append(p.at, i)
	}
	out := make([]part, len(parts))
	for i, p := range parts {
		out[i] = *p
	}
	return out
}

// gather sends every part at once (at most one per node, so bounded by
// the cluster's size), pinned to its node, and puts each part's items in
// their places in out; a part answered with an error as a whole gives each
// of its positions errItem with that error. It joins the errors of parts
// no node could be asked for.
func gather[I any](ctx context.Context, parts []part, out []I,
	send func(ctx context.Context, at []int) (items []I, status int, body []byte, err error),
	errItem func(i int, e *client.Error) I) error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for n, p := range parts {
		pctx := ctx
		if p.node != nil {
			pctx = withPin(ctx, p.node)
		}
		wg.Go(func() {
			items, status, body, err := send(pctx, p.at)
			switch {
			case err != nil:
				errs[n] = err
			case len(items) != len(p.at):
				e := partError(status, body)
				for _, i := range p.at {
					out[i] = errItem(i, e)
				}
			default:
				for j, i := range p.at {
					out[i] = items[j] // parts are disjoint: no two write one place
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// partError is the error item of every key of a part whose request was
// answered with an error as a whole.
func partError(status int, body []byte) *client.Error {
	var eb client.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		return &eb.Error
	}
	return &client.Error{Code: client.ErrorCodeInternal, Message: fmt.Sprintf("status %d: %s", status, bytesHead(body))}
}

// BatchGetKV reads keys (at most MaxBatch) from the nodes that lead their
// groups: one request per leader node, all at once, each read by its node
// from its own replicas (a linearizable read under the leader's lease
// sends no message). Items are in the order of keys; a key has its own
// error when its read failed, and every key of a part whose request failed
// as a whole carries that error. RouteRevision is the lowest of the parts'
// revisions. The error is for a part no node could be asked for at all.
func (c *Client) BatchGetKV(ctx context.Context, keys []string, params *client.BatchGetKVParams) (*client.KVBatchResult, error) {
	if len(keys) > MaxBatch {
		return nil, ErrBatchTooLarge
	}
	out := &client.KVBatchResult{Items: make([]client.KVBatchItem, len(keys))}
	var mu sync.Mutex
	parts := c.split(func(i int) string { return keys[i] }, len(keys))
	err := gather(ctx, parts, out.Items, func(ctx context.Context, at []int) ([]client.KVBatchItem, int, []byte, error) {
		req := client.BatchKeys{Keys: make([]string, len(at))}
		for j, i := range at {
			req.Keys[j] = keys[i]
		}
		r, err := c.api.BatchGetKVWithResponse(ctx, params, req)
		if err != nil {
			return nil, 0, nil, err
		}
		if r.JSON200 == nil {
			return nil, r.StatusCode(), r.Body, nil
		}
		mu.Lock()
		if out.RouteRevision == 0 || r.JSON200.RouteRevision < out.RouteRevision {
			out.RouteRevision = r.JSON200.RouteRevision
		}
		mu.Unlock()
		return r.JSON200.Items, 0, nil, nil
	}, func(i int, e *client.Error) client.KVBatchItem { return client.KVBatchItem{Key: keys[i], Error: e} })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BatchWriteKV applies ops (at most MaxBatch) through the nodes that lead
// their groups, one request per leader node, all at once. As on the
// server, a hash slot's operations are atomic (all or none) and slots are
// independent; since a slot belongs to one group, splitting by node never
// splits a slot. Every part carries the same Idempotency-Key —
// idempotencyKey, or a new one when empty — and the server derives each
// slot's key from it, so a retried part, or the whole call retried with
// the same key after an error, applies every slot once however the slots
// are split. Items are in the order of ops.
func (c *Client) BatchWriteKV(ctx context.Context, ops []client.KVBatchOp, idempotencyKey string) (*client.KVBatchWriteResult, error) {
	if len(ops) > MaxBatch {
		return nil, ErrBatchTooLarge
	}
	if idempotencyKey == "" {
		idempotencyKey = newIdempotencyKey()
	}
	keyOf := func(i int) string {
		if ops[i].Key == nil {
			return ""
		}
		return *ops[i].Key
	}
	out := &client.KVBatchWriteResult{Items: make([]client.KVBatchWriteItem, len(ops))}
	parts := c.split(keyOf, len(ops))
	params := &client.BatchWriteKVParams{IdempotencyKey: &idempotencyKey}
	err := gather(ctx, parts, out.Items, func(ctx context.Context, at []int) ([]client.KVBatchWriteItem, int, []byte, error) {
		req := client.BatchKVWrite{Ops: make([]client.KVBatchOp, len(at))}
		for j, i := range at {
			req.Ops[j] = ops[i]
		}
		r, err := c.api.BatchWriteKVWithResponse(ctx, params, req)
		if err != nil {
			return nil, 0, nil, err
		}
		if r.JSON200 == nil {
			return nil, r.StatusCode(), r.Body, nil
		}
		return r.JSON200.Items, 0, nil, nil
	}, func(i int, e *client.Error) client.KVBatchWriteItem {
		op := ""
		if ops[i].Op != nil {
			op = *ops[i].Op
		}
		return client.KVBatchWriteItem{Key: keyOf(i), Op: op, Error: e}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
