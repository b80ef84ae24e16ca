package routed

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// Do sends req to the node that leads its key's group — or, for a request
// without a route key or while the leader is unknown, to its own server or
// another node, which forwards it — and retries it by the error contract:
//
//   - an answer with retryable: true (route_not_ready, not_leader, busy,
//     slot_migrating, timeout, wrong_group, rate_limited, queue_full, …) is
//     asked again after its Retry-After, jittered; a not_leader with a
//     leader_hint is asked again of that node at once. A request that is
//     not safe to send twice (a cluster operation: it takes no
//     Idempotency-Key) is asked again only after a refusal that proves it
//     was not proposed — never after a timeout, which may still commit;
//   - a node that cannot be reached is skipped for a second and the
//     request goes to another — when it may have reached the node, only a
//     request that is safe to send twice (a read, or a write with an
//     Idempotency-Key, which Do adds to every data write without one);
//   - at most Config.MaxAttempts sends, each one's wait for the answer's
//     head bounded by Config.AttemptTimeout, all by req's context: a wait
//     that would pass its deadline is not begun, and the last answer is
//     returned as it is.
//
// Every answer teaches the view: a keyed answer's route headers name the
// group's leader and term, a newer route revision or a slot error asks for
// that slot's route again (one refresh at a time, at most one per
// Config.RefreshEvery). Do implements client.HttpRequestDoer.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c.stats.requests.Add(1)
	c.first.Do(func() { c.want(func(p *pendingRefresh) { p.routes, p.nodes = true, true }) })
	if needsIdempotencyKey(req) {
		req.Header.Set("Idempotency-Key", NewIdempotencyKey())
	}
	rq := classify(req)
	slot := -1
	if rq.keyed {
		slot = slotOf(rq.key)
	}
	pin := pinned(ctx)
	avoid := ""
	for attempt := 0; ; attempt++ {
		u, direct := c.target(req, rq, slot, pin, attempt, avoid)
		if direct {
			c.stats.direct.Add(1)
		}
		resp, err := c.send(ctx, req, u, attempt)
		last := attempt+1 >= c.cfg.MaxAttempts
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errNoBody) {
				return nil, err
			}
			c.markDown(u.Host)
			if t := c.view.load(); rq.keyed {
				if node, group := t.leaderOf(slot); node != 0 && t.nodes[node] != nil && t.nodes[node].Host == u.Host {
					c.view.forgetLeader(group, node)
				}
			}
			if last || !(rq.retrySafe || refused(err)) || !c.sleep(ctx, c.backoff(attempt)) {
				return nil, err
			}
			avoid = u.Host
			c.stats.retries.Add(1)
			continue
		}
		if rq.keyed {
			c.learn(resp.Header, slot, rq.key)
		}
		if !mayRetry(resp.StatusCode) {
			return resp, nil
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var eb client.ErrorBody
		if rerr != nil || json.Unmarshal(body, &eb) != nil {
			return resp, nil
		}
		switch eb.Error.Code {
		case client.ErrorCodeRouteRevisionMismatch, client.ErrorCodeSlotMigrating, client.ErrorCodeWrongGroup, client.ErrorCodeRouteNotReady:
			if rq.keyed {
				c.staleSlot(slot, rq.key) // retried or not, the slot's route is stale
			}
		}
		if !eb.Error.Retryable || last || !rq.retrySafe && !refusedUnproposed(eb.Error.Code) {
			return resp, nil
		}
		wait := c.backoff(attempt)
		if hint := eb.Error.LeaderHint; eb.Error.Code == client.ErrorCodeNotLeader && hint != nil && rq.keyed {
			t := c.view.load()
			if _, group := t.leaderOf(slot); group != 0 && t.nodes[uint64(*hint)] != nil {
				c.view.learnLeader(group, uint64(*hint), 0, true)
				wait = 0 // the hint is where to go now
			}
		}
		if wait > 0 {
			wait = max(wait, retryAfter(resp.Header))
		}
		if !c.sleep(ctx, wait) {
			return resp, nil // the deadline comes first: the answer is the answer
		}
		avoid = ""
		c.stats.retries.Add(1)
	}
}

// target is where attempt goes: a pinned node first (a batch's part), the
// leader of the key's group when known and not failing, else the request's
// own server on the first attempt and any other node after.
func (c *Client) target(req *http.Request, rq request, slot int, pin *url.URL, attempt int, avoid string) (u *url.URL, direct bool) {
	if pin != nil && attempt == 0 {
		return pin, true
	}
	if rq.keyed {
		t := c.view.load()
		if node, _ := t.leaderOf(slot); node != 0 {
			if u := t.nodes[node]; u != nil && u.Host != avoid && !c.isDown(u.Host) {
				return u, true
			}
		}
	}
	if attempt == 0 && !c.isDown(req.URL.Host) {
		return req.URL, false
	}
	return c.anyNode(avoid), false
}

// errNoBody: a request whose body cannot be read again is not retried.
var errNoBody = errors.New("routed: the request's body cannot be sent again")

// send makes one attempt at u. Config.AttemptTimeout bounds the wait for
// the answer's head only (a cut link hangs there); the body — a stream, a
// long listing — is read under the caller's context, which the answer's
// body keeps until it is closed.
func (c *Client) send(ctx context.Context, req *http.Request, u *url.URL, attempt int) (*http.Response, error) {
	actx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(c.cfg.AttemptTimeout, cancel)
	r := req.Clone(actx)
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, ""
	if attempt > 0 && req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			timer.Stop()
			cancel()
			return nil, errNoBody
		}
		b, err := req.GetBody()
		if err != nil {
			timer.Stop()
			cancel()
			return nil, err
		}
		r.Body = b
	}
	resp, err := c.hc.Do(r)
	if !timer.Stop() && err == nil {
		// The head came just as the timer fired: its body may be cut.
		_ = resp.Body.Close()
		err = fmt.Errorf("routed: no answer within %v", c.cfg.AttemptTimeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody ends its attempt's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// learn takes what a keyed answer's route headers say into the view.
func (c *Client) learn(h http.Header, slot int, key string) {
	num := func(name string) uint64 {
		v, _ := strconv.ParseUint(h.Get(name), 10, 64)
		return v
	}
	group := uint32(num("X-Slot-Group"))
	if group == 0 {
		return
	}
	t := c.view.load()
	if rev := num("X-Route-Revision"); rev > t.revision || t.groups[slot] != group && rev >= t.revision {
		c.staleSlot(slot, key) // the slot's group changed: ask for it (the revision, if newer, follows)
	}
	if t.groups[slot] == group {
		c.view.learnLeader(group, num("X-Leader-Node"), num("X-Leader-Term"), false)
	}
}

// mayRetry: the statuses whose answer can be retryable.
func mayRetry(status int) bool {
	switch status {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusInternalServerError:
		return true
	}
	return false
}

// refusedUnproposed: the server refused the request before proposing it,
// so sending it again cannot apply it twice. A timeout is not among them:
// a proposal that timed out may still commit (the server says so), and a
// request without an Idempotency-Key is then answered, not re-sent.
func refusedUnproposed(code client.ErrorCode) bool {
	switch code {
	case client.ErrorCodeNotLeader, client.ErrorCodeRouteNotReady, client.ErrorCodeQueueFull, client.ErrorCodeRateLimited,
		client.ErrorCodeBusy, client.ErrorCodeWrongGroup, client.ErrorCodeSlotMigrating, client.ErrorCodeRouteRevisionMismatch,
		client.ErrorCodeNoSpace:
		return true
	}
	return false
}

// refused: the node was not reached at all, so nothing was applied.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// retryAfter is the answer's Retry-After (whole seconds), or 0.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(min(s, 60)) * time.Second
}

// backoff is the wait before attempt+1: full jitter over a doubling bound.
func (c *Client) backoff(attempt int) time.Duration {
	bound := min(c.cfg.Backoff<<min(attempt, 20), c.cfg.MaxBackoff)
	if bound <= 0 {
		return 0
	}
	return bound/2 + rand.N(bound/2+1)
}

// sleep waits d unless ctx ends first or would end within it (false).
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// needsIdempotencyKey: a data write without one (the cluster's operations
// and the watch do not take it).
func needsIdempotencyKey(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	p := req.URL.Path
	return strings.HasPrefix(p, "/v1/") && !strings.HasPrefix(p, "/v1/cluster/") && req.Header.Get("Idempotency-Key") == ""
}

// newIdempotencyKey is 128 random bits, printable.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return "routed-" + hex.EncodeToString(b[:])
}

type pinKey struct{}

// withPin sends the requests of ctx to u first (a batch's part, split by
// its leader node).
func withPin(ctx context.Context, u *url.URL) context.Context {
	return context.WithValue(ctx, pinKey{}, u)
}

func pinned(ctx context.Context) *url.URL {
	u, _ := ctx.Value(pinKey{}).(*url.URL)
	return u
}
