package routed

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/slotmeta/slotmeta/client"
)

// Client is a route-aware client of a slotmeta cluster. API() has a typed
// method for every operation of the API; Client sends each of them to the
// node that leads its key's group, retries by the rules of the error it
// gets, and keeps its view of the cluster fresh in the background until
// Close.
type Client struct {
	cfg   Config
	seeds []*url.URL
	hc    *http.Client // the raw client: one attempt, no routing
	api   *client.ClientWithResponses
	view  *view

	editors []client.RequestEditorFn // auth, on every request the client makes itself

	down sync.Map // host → time.Time until which it is not chosen (it refused or hung)
	next atomic.Uint64

	limiter *rate.Limiter
	wake    chan struct{} // a refresh is pending (buffer 1)
	pmu     sync.Mutex
	pending pendingRefresh

	stats stats

	first sync.Once // the first request asks for the first view

	stop   context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
}

// pendingRefresh is what the refresher is to do next.
type pendingRefresh struct {
	routes bool           // the whole table
	nodes  bool           // the nodes' addresses
	slots  map[int]string // a stale slot → a key of it (resolve asks by key)
}

// New starts a client of the cluster cfg names. The route stream, if on,
// is opened at once; otherwise nothing is sent before the first request
// (or Refresh). It does not wait for the cluster: a request sent before the
// first view arrives goes to an endpoint, whose node forwards it. Call
// Refresh to wait for a view. Close stops the client's background work.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc, err := cfg.httpClient()
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:     cfg,
		hc:      hc,
		view:    newView(),
		limiter: rate.NewLimiter(rate.Every(cfg.RefreshEvery), 1),
		wake:    make(chan struct{}, 1),
	}
	for _, ep := range cfg.Endpoints {
		u, _ := url.Parse(ep) // Validate parsed it
		c.seeds = append(c.seeds, &url.URL{Scheme: u.Scheme, Host: u.Host})
	}
	if cfg.Token != "" {
		token := cfg.Token
		c.editors = append(c.editors, func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		})
	}
	opts := []client.ClientOption{client.WithHTTPClient(c)}
	for _, e := range c.editors {
		opts = append(opts, client.WithRequestEditorFn(e))
	}
	if c.api, err = client.NewClientWithResponses(c.seeds[0].String(), opts...); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.refreshLoop(ctx) }()
	if !cfg.NoRouteStream {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.followRoutes(ctx) }()
	}
	return c, nil
}

// API is the typed API. Every call goes through the client's routing and
// retries; a call's context is its deadline.
func (c *Client) API() *client.ClientWithResponses { return c.api }

// Close stops the background refresh and the route stream and waits for
// them. Requests in flight finish; the client must not be used after.
func (c *Client) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.stop()
		c.wg.Wait()
		c.hc.CloseIdleConnections()
	}
	return nil
}

// Revision is the route revision of the client's view (0 before the
// first table arrived).
func (c *Client) Revision() uint64 { return c.view.load().revision }

// Leader is the node the client believes leads the group serving key,
// and that group (0, 0 while unknown).
func (c *Client) Leader(key string) (node uint64, group uint32) {
	return c.view.load().leaderOf(slotOf(key))
}

// markDown keeps host out of the choice of targets for a while after it
// refused or hung.
func (c *Client) markDown(host string) {
	c.down.Store(host, time.Now().Add(time.Second))
}

func (c *Client) isDown(host string) bool {
	until, ok := c.down.Load(host)
	if !ok {
		return false
	}
	if time.Now().After(until.(time.Time)) {
		c.down.Delete(host)
		return false
	}
	return true
}

// anyNode is a target for a request no known leader serves: the known
// nodes and the endpoints in turn, skipping the ones that just failed.
func (c *Client) anyNode(avoid string) *url.URL {
	t := c.view.load()
	cands := make([]*url.URL, 0, len(t.nodes)+len(c.seeds))
	for _, u := range t.nodes {
		cands = append(cands, u)
	}
	cands = append(cands, c.seeds...)
	n := c.next.Add(1)
	for i := range cands {
		u := cands[(int(n)+i)%len(cands)]
		if u.Host != avoid && !c.isDown(u.Host) {
			return u
		}
	}
	return cands[int(n)%len(cands)]
}
