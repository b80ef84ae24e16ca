package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Client calls other nodes' peer RPC. It bounds the requests in flight to
// each peer (past the bound: busy, at once) and gives every request the
// caller's remaining time budget.
type Client struct {
	http   *http.Client
	raw    *http.Transport  // under streams: HTTP exchanges and stream openings
	stream *streamTransport // the hot requests over per-peer streams (stream.go)
	scheme string           // http, or https with TLS (UseTLS)
	secret *Secret
	bound  int
	from   slotstore.NodeID                                 // named in every call (From); 0: none
	onCall func(path string, took time.Duration, err error) // OnCall; nil: none

	mu          sync.Mutex
	slots       map[string]chan struct{} // by peer address
	forwarders  map[string]*forwarder    // by peer address (forward.go)
	readIndexes map[string]*riBatcher    // by peer address (readindex.go)

	took sync.Map // peer address → tookSecret

	batches, batched atomic.Uint64 // batch requests sent, commands they carried
	singles          atomic.Uint64 // forwarded commands sent alone
}

// NewClient returns a client whose requests carry secret, with at most
// bound requests in flight to one peer.
func NewClient(secret *Secret, bound int) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	st := newStreamTransport(tr, bound)
	return &Client{http: &http.Client{Transport: st}, raw: tr, stream: st, scheme: "http", secret: secret, bound: bound,
		slots: map[string]chan struct{}{}, forwarders: map[string]*forwarder{}, readIndexes: map[string]*riBatcher{}}
}

// From makes every call name this node (set before the first call).
func (c *Client) From(id slotstore.NodeID) { c.from = id }

// OnCall has f told of every Call: its path, how long the peer took to
// answer (to the answer's headers) and its error (set before the first
// call; for metrics: it must not block).
func (c *Client) OnCall(f func(path string, took time.Duration, err error)) { c.onCall = f }

// UseTLS makes the client call peers over TLS with p's client config (this
// node's certificate, the cluster's CA); nil leaves it on plain HTTP. It is
// called before the first call (and before WrapTransport).
func (c *Client) UseTLS(p *TLS) {
	if p == nil {
		return
	}
	// NewClient's own transport, under the streams. Dialing does the
	// handshake itself, so that every new connection uses the certificate
	// and CA pool current then (a reload needs no new client).
	c.raw.DialTLSContext = p.dialTLS(c.raw.DialContext)
	c.scheme = "https"
}

// WrapTransport wraps the client's HTTP transport (fault injection in
// tests), before the first call.
func (c *Client) WrapTransport(wrap func(http.RoundTripper) http.RoundTripper) {
	c.http.Transport = wrap(c.http.Transport)
}

// Close closes the peer streams (later calls go over HTTP) and drops the
// idle connections.
func (c *Client) Close() {
	c.stream.close()
	c.raw.CloseIdleConnections()
}

func (c *Client) acquire(addr string) (func(), error) {
	c.mu.Lock()
	s, ok := c.slots[addr]
	if !ok {
		s = make(chan struct{}, c.bound)
		c.slots[addr] = s
	}
	c.mu.Unlock()
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	default:
		return nil, &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: 100 * time.Millisecond,
			Message: fmt.Sprintf("%d requests already in flight to peer %s", c.bound, addr)}
	}
}

// Call sends one peer request and returns the response on 200, or the
// peer's error. sent reports whether the request may have reached the peer
// (a transport failure after that leaves a write's outcome unknown).
func (c *Client) Call(ctx context.Context, method, addr, path string, body []byte, hdr map[string]string) (resp *http.Response, sent bool, err error) {
	if c.onCall != nil {
		start := time.Now()
		defer func() { c.onCall(path, time.Since(start), err) }()
	}
	first := c.secret.Current()
	if t, ok := c.took.Load(addr); ok && time.Now().Before(t.(tookSecret).until) && slices.Contains(c.secret.Previous(), t.(tookSecret).secret) {
		first = t.(tookSecret).secret // what the peer took a moment ago
	}
	resp, sent, err = c.call(ctx, method, addr, path, body, hdr, first)
	// The peer may not have the new secret yet (a rotation in progress):
	// again with the others, the current one then the earlier ones newest
	// first, while they last. What it took is remembered for a second, so
	// that the peer refuses one call a second, not every call (it limits
	// refusals per source: server.go).
	if !secretRefused(err) {
		return resp, sent, err // every call but a refused one: no list built
	}
	for _, other := range append([]string{c.secret.Current()}, c.secret.Previous()...) {
		if other == first {
			continue
		}
		if resp, sent, err = c.call(ctx, method, addr, path, body, hdr, other); !secretRefused(err) {
			if err == nil && other != c.secret.Current() {
				c.took.Store(addr, tookSecret{secret: other, until: time.Now().Add(time.Second)})
			}
			break
		}
	}
	return resp, sent, err
}

// secretRefused reports a call refused for its secret: wrong, or wrong too
// often from this address (the peer takes a right one all the same).
func secretRefused(err error) bool {
	code := slotstore.ErrorCode(err)
	return code == slotstore.CodeUnauthenticated || code == slotstore.CodeRateLimited
}

// tookSecret is an earlier secret a peer took, remembered until until.
type tookSecret struct {
	secret string
	until  time.Time
}

// call sends one request carrying secret (path may carry a query string).
func (c *Client) call(ctx context.Context, method, addr, path string, body []byte, hdr map[string]string, secret string) (resp *http.Response, sent bool, err error) {
	release, err := c.acquire(addr)
	if err != nil {
		return nil, false, err
	}
	defer release()
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, false, fmt.Errorf("cluster: peer call without a deadline")
	}
	remaining := time.Until(deadline)
	if remaining < time.Millisecond {
		return nil, false, &slotstore.Error{Code: slotstore.CodeTimeout, Message: "no time left to call a peer"}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+addr+Prefix+path, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set(hdrSecret, secret)
	if c.from != 0 {
		req.Header.Set(hdrFrom, strconv.FormatUint(uint64(c.from), 10))
	}
	// A peer works at most maxPeerTime on a request and refuses a longer
	// budget: a caller with more time left asks for that much (an
	// operator's call with a three-minute deadline was refused
	// invalid_argument when the controller leader was another node).
	budget := min(remaining, maxPeerTime)
	req.Header.Set(hdrTimeoutMs, strconv.FormatInt(max(budget.Milliseconds(), 1), 10))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err = c.http.Do(req)
	if err != nil {
		var op *net.OpError
		dialFailed := errors.As(err, &op) && op.Op == "dial"
		if isTLSRefusal(err) {
			// The handshake failed: the request never reached the peer.
			return nil, false, &slotstore.Error{Code: slotstore.CodeRouteNotReady, Message: "TLS handshake with peer " + addr + " failed",
				Err: err, RetryAfter: 500 * time.Millisecond}
		}
		code := slotstore.CodeRouteNotReady
		if errors.Is(err, context.DeadlineExceeded) {
			code = slotstore.CodeTimeout
		}
		return nil, !dialFailed, &slotstore.Error{Code: code, Message: "peer " + addr + " unreachable", Err: err, RetryAfter: 500 * time.Millisecond}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var pe envelope
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&pe); err != nil || pe.Code == "" {
			return nil, true, &slotstore.Error{Code: slotstore.CodeInternal, Message: fmt.Sprintf("peer %s answered %d", addr, resp.StatusCode)}
		}
		return resp, true, pe.err()
	}
	return resp, true, nil
}

// Caller is what CallJSON needs of a client (Client, or a test's fake).
type Caller interface {
	Call(ctx context.Context, method, addr, path string, body []byte, hdr map[string]string) (resp *http.Response, sent bool, err error)
}

// CallJSON sends one peer request and decodes its JSON answer: the peer's
// error as Call returns it, an answer that could not be read whole
// (timeout) or that does not decode (internal), each saying what was asked
// (what, e.g. "the controller leader's answer").
func CallJSON[T any](ctx context.Context, c Caller, method, addr, path string, body []byte, what string) (T, error) {
	var out T
	resp, _, err := c.Call(ctx, method, addr, path, body, nil)
	if err != nil {
		return out, err
	}
	b, err := ReadBody(resp)
	if err != nil {
		return out, slotstore.Wrap(slotstore.CodeTimeout, err, "reading "+what)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, slotstore.Wrap(slotstore.CodeInternal, err, what+" does not decode")
	}
	return out, nil
}

// ReadBody reads and closes a response body, bounded to one entry.
func ReadBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, meta.MaxEntryBytes+1))
}

// Propose forwards an encoded command for group g (0: the group owning the
// command's hash slot) to the node at addr, on its own (Forward batches). sent reports whether the
// request may have reached the node: an error with sent false is a definite
// "not proposed there".
func (c *Client) Propose(ctx context.Context, addr string, cmd []byte, g slotstore.GroupID) (res meta.Result, route slotstore.Route, sent bool, err error) {
	var hdr map[string]string
	if g != 0 {
		hdr = map[string]string{HdrGroup: strconv.FormatUint(uint64(g), 10)}
	}
	resp, sent, err := c.Call(ctx, http.MethodPost, addr, "propose", cmd, hdr)
	if resp != nil {
		route = routeFromHeaders(resp.Header)
	}
	if err != nil {
		if sent && resp == nil {
			// The connection failed after the request may have left.
			return meta.Result{}, route, true, &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, RetryAfter: time.Second,
				Message: "lost the connection to the leader; the write may or may not have been applied"}
		}
		return meta.Result{}, route, sent, err
	}
	body, err := ReadBody(resp)
	if err != nil {
		return meta.Result{}, route, true, &slotstore.Error{Code: slotstore.CodeTimeout, Err: err,
			Message: "lost the leader's answer; the write may or may not have been applied"}
	}
	res, err = meta.DecodeResult(body)
	if err != nil {
		return meta.Result{}, route, true, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable result from the leader")
	}
	return res, route, true, nil
}

// Read forwards a query to the node at addr.
func (c *Client) Read(ctx context.Context, addr string, q meta.Query, cons meta.Consistency) (any, meta.ReadInfo, error) {
	hdr := map[string]string{}
	if cons == meta.Local {
		hdr[HdrConsistency] = "local"
	}
	resp, _, err := c.Call(ctx, http.MethodPost, addr, "read", meta.EncodeQuery(q), hdr)
	var info meta.ReadInfo
	if resp != nil {
		info.Route = routeFromHeaders(resp.Header)
		s, _ := strconv.ParseUint(resp.Header.Get("X-Served-By"), 10, 64)
		info.ServedBy = slotstore.NodeID(s)
		info.AppliedIndex, _ = strconv.ParseUint(resp.Header.Get("X-Applied-Index"), 10, 64)
	}
	if err != nil {
		return nil, info, err
	}
	body, err := ReadBody(resp)
	if err != nil {
		return nil, info, &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, Message: "lost the peer's answer"}
	}
	v, err := meta.DecodeAnswer(body)
	if err != nil {
		return nil, info, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable answer from a peer")
	}
	return v, info, nil
}

// Leaders asks the node at addr for its live leader views.
func (c *Client) Leaders(ctx context.Context, addr string) ([]LeaderView, error) {
	resp, _, err := c.Call(ctx, http.MethodGet, addr, "leaders", nil, nil)
	if err != nil {
		return nil, err
	}
	body, err := ReadBody(resp)
	if err != nil {
		return nil, err
	}
	var views []LeaderView
	return views, json.Unmarshal(body, &views)
}

// Applied asks the node at addr for the applied index of its replica of g.
func (c *Client) Applied(ctx context.Context, addr string, g slotstore.GroupID) (uint64, error) {
	resp, _, err := c.Call(ctx, http.MethodGet, addr, "applied?group="+strconv.FormatUint(uint64(g), 10), nil, nil)
	if err != nil {
		return 0, err
	}
	body, err := ReadBody(resp)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(body), 10, 64)
}
