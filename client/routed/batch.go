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

// ErrNoIdempotencyKey refuses a batch write without an Idempotency-Key:
// without one the caller could not retry it after an error that left some
// of its parts applied.
var ErrNoIdempotencyKey = errors.New("routed: a batch write needs an Idempotency-Key (NewIdempotencyKey)")

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
// of its positions errItem with that error. It returns the lowest route
// revision the parts answered (a read's; 0 for writes), and joins the
// errors of parts no node could be asked for.
func gather[I any](ctx context.Context, parts []part, out []I,
	send func(ctx context.Context, at []int) (items []I, rev int64, status int, body []byte, err error),
	errItem func(i int, e *client.Error) I) (int64, error) {
	errs := make([]error, len(parts))
	var rev revisions
	var wg sync.WaitGroup
	for n, p := range parts {
		pctx := ctx
		if p.node != nil {
			pctx = withPin(ctx, p.node)
		}
		wg.Go(func() {
			items, r, status, body, err := send(pctx, p.at)
			switch {
			case err != nil:
				errs[n] = err
			case len(items) != len(p.at):
				e := partError(status, body)
				for _, i := range p.at {
					out[i] = errItem(i, e)
				}
			default:
				rev.add(r)
				for j, i := range p.at {
					out[i] = items[j] // parts are disjoint: no two write one place
				}
			}
		})
	}
	wg.Wait()
	return rev.lowest, errors.Join(errs...)
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
	rev, err := gather(ctx, c.split(func(i int) string { return keys[i] }, len(keys)), out.Items,
		func(ctx context.Context, at []int) ([]client.KVBatchItem, int64, int, []byte, error) {
			r, err := c.api.BatchGetKVWithResponse(ctx, params, client.BatchKeys{Keys: pick(keys, at)})
			if err != nil {
				return nil, 0, 0, nil, err
			}
			if r.JSON200 == nil {
				return nil, 0, r.StatusCode(), r.Body, nil
			}
			return r.JSON200.Items, r.JSON200.RouteRevision, 0, nil, nil
		}, func(i int, e *client.Error) client.KVBatchItem { return client.KVBatchItem{Key: keys[i], Error: e} })
	if err != nil {
		return nil, err
	}
	out.RouteRevision = rev
	return out, nil
}

// BatchWriteKV applies ops (at most MaxBatch) through the nodes that lead
// their groups, one request per leader node, all at once. As on the
// server, a hash slot's operations are atomic (all or none) and slots are
// independent; since a slot belongs to one group, splitting by node never
// splits a slot. Every part carries idempotencyKey (NewIdempotencyKey
// makes one; it is required), from which the server derives each slot's
// key, so a retried part — or the whole call retried with the same key
// after an error, when some parts may have applied — applies every slot
// once however the slots are split. Items are in the order of ops.
func (c *Client) BatchWriteKV(ctx context.Context, ops []client.KVBatchOp, idempotencyKey string) (*client.KVBatchWriteResult, error) {
	if len(ops) > MaxBatch {
		return nil, ErrBatchTooLarge
	}
	if idempotencyKey == "" {
		return nil, ErrNoIdempotencyKey
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
	_, err := gather(ctx, parts, out.Items, func(ctx context.Context, at []int) ([]client.KVBatchWriteItem, int64, int, []byte, error) {
		r, err := c.api.BatchWriteKVWithResponse(ctx, params, client.BatchKVWrite{Ops: pick(ops, at)})
		if err != nil {
			return nil, 0, 0, nil, err
		}
		if r.JSON200 == nil {
			return nil, 0, r.StatusCode(), r.Body, nil
		}
		return r.JSON200.Items, 0, 0, nil, nil
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

// BatchGetUsers reads users by uid (at most MaxBatch) as BatchGetKV reads
// keys: one request per leader node, all at once, items in uid order.
func (c *Client) BatchGetUsers(ctx context.Context, uids []string, params *client.BatchGetUsersParams) (*client.UserBatchResult, error) {
	if len(uids) > MaxBatch {
		return nil, ErrBatchTooLarge
	}
	out := &client.UserBatchResult{Items: make([]client.UserBatchItem, len(uids))}
	rev, err := gather(ctx, c.split(func(i int) string { return uids[i] }, len(uids)), out.Items,
		func(ctx context.Context, at []int) ([]client.UserBatchItem, int64, int, []byte, error) {
			r, err := c.api.BatchGetUsersWithResponse(ctx, params, client.BatchUIDs{Uids: pick(uids, at)})
			if err != nil {
				return nil, 0, 0, nil, err
			}
			if r.JSON200 == nil {
				return nil, 0, r.StatusCode(), r.Body, nil
			}
			return r.JSON200.Items, r.JSON200.RouteRevision, 0, nil, nil
		}, func(i int, e *client.Error) client.UserBatchItem { return client.UserBatchItem{Uid: uids[i], Error: e} })
	if err != nil {
		return nil, err
	}
	out.RouteRevision = rev
	return out, nil
}

// BatchGetChannels reads channels (at most MaxBatch) as BatchGetKV reads
// keys (a channel's route key is its id).
func (c *Client) BatchGetChannels(ctx context.Context, refs []client.ChannelRef, params *client.BatchGetChannelsParams) (*client.ChannelBatchResult, error) {
	if len(refs) > MaxBatch {
		return nil, ErrBatchTooLarge
	}
	out := &client.ChannelBatchResult{Items: make([]client.ChannelBatchItem, len(refs))}
	rev, err := gather(ctx, c.split(func(i int) string { return refs[i].ChannelId }, len(refs)), out.Items,
		func(ctx context.Context, at []int) ([]client.ChannelBatchItem, int64, int, []byte, error) {
			r, err := c.api.BatchGetChannelsWithResponse(ctx, params, client.BatchChannels{Channels: pick(refs, at)})
			if err != nil {
				return nil, 0, 0, nil, err
			}
			if r.JSON200 == nil {
				return nil, 0, r.StatusCode(), r.Body, nil
			}
			return r.JSON200.Items, r.JSON200.RouteRevision, 0, nil, nil
		}, func(i int, e *client.Error) client.ChannelBatchItem {
			return client.ChannelBatchItem{ChannelType: refs[i].ChannelType, ChannelId: refs[i].ChannelId, Error: e}
		})
	if err != nil {
		return nil, err
	}
	out.RouteRevision = rev
	return out, nil
}

// BatchGetChannelRuntime reads channels' runtime meta (at most MaxBatch)
// as BatchGetChannels reads channels.
func (c *Client) BatchGetChannelRuntime(ctx context.Context, refs []client.ChannelRef, params *client.BatchGetChannelRuntimeParams) (*client.RuntimeBatchResult, error) {
	if len(refs) > MaxBatch {
		return nil, ErrBatchTooLarge
	}
	out := &client.RuntimeBatchResult{Items: make([]client.RuntimeBatchItem, len(refs))}
	rev, err := gather(ctx, c.split(func(i int) string { return refs[i].ChannelId }, len(refs)), out.Items,
		func(ctx context.Context, at []int) ([]client.RuntimeBatchItem, int64, int, []byte, error) {
			r, err := c.api.BatchGetChannelRuntimeWithResponse(ctx, params, client.BatchChannels{Channels: pick(refs, at)})
			if err != nil {
				return nil, 0, 0, nil, err
			}
			if r.JSON200 == nil {
				return nil, 0, r.StatusCode(), r.Body, nil
			}
			return r.JSON200.Items, r.JSON200.RouteRevision, 0, nil, nil
		}, func(i int, e *client.Error) client.RuntimeBatchItem {
			return client.RuntimeBatchItem{ChannelType: refs[i].ChannelType, ChannelId: refs[i].ChannelId, Error: e}
		})
	if err != nil {
		return nil, err
	}
	out.RouteRevision = rev
	return out, nil
}

// pick is the elements of s at positions at.
func pick[T any](s []T, at []int) []T {
	out := make([]T, len(at))
	for j, i := range at {
		out[j] = s[i]
	}
	return out
}

// revisions keeps the lowest route revision the parts of a batch answered.
type revisions struct {
	mu     sync.Mutex
	lowest int64
}

func (r *revisions) add(rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lowest == 0 || rev < r.lowest {
		r.lowest = rev
	}
}
