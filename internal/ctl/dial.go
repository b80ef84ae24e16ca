package ctl

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/slotmeta/slotmeta/client"
)

// dial builds the one API client every command calls through: HTTPS when a
// CA is given, the bearer token, a per-request bound of cfg.Timeout, and a
// doer that fails over to the next endpoint when one cannot be connected to.
//
// This is the one place that decides where a request goes: a route-aware
// doer (sending each request to the leader of its key's group) replaces
// failover here, and no command changes.
func dial(cfg config) (*client.ClientWithResponses, error) {
	var opts []client.ClientOption
	if cfg.CACert != "" {
		opts = append(opts, client.WithTLS(client.TLSFiles{CA: cfg.CACert, CertFile: cfg.Cert, KeyFile: cfg.Key}))
	}
	if cfg.Token != "" {
		opts = append(opts, client.WithBearerToken(cfg.Token))
	}
	// After WithTLS, which installs its own *http.Client.
	opts = append(opts, func(c *client.Client) error {
		hc, _ := c.Client.(*http.Client)
		if hc == nil {
			hc = &http.Client{}
		}
		hc.Timeout = cfg.Timeout
		f, err := newFailover(hc, cfg.Endpoints)
		c.Client = f
		return err
	})
	return client.NewClientWithResponses(cfg.Endpoints[0], opts...)
}

// failover sends a request to the endpoint that last answered and, when no
// connection can be made there (refused, no route, unknown host: nothing
// was sent, so a write is safe to send elsewhere), to the next one in turn.
type failover struct {
	next  *http.Client
	bases []*url.URL

	mu   sync.Mutex
	last int // the endpoint that answered last: paging stays on it
}

func newFailover(next *http.Client, endpoints []string) (*failover, error) {
	f := &failover{next: next}
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			return nil, err
		}
		f.bases = append(f.bases, u)
	}
	return f, nil
}

func (f *failover) Do(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	start := f.last
	f.mu.Unlock()
	var firstErr error
	for i := range f.bases {
		n := (start + i) % len(f.bases)
		r, err := f.rebase(req, n)
		if err != nil {
			return nil, err
		}
		resp, err := f.next.Do(r)
		if err == nil {
			f.mu.Lock()
			f.last = n
			f.mu.Unlock()
			return resp, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if req.Context().Err() != nil || !cannotConnect(err) {
			return nil, err
		}
	}
	return nil, firstErr
}

// rebase returns req aimed at endpoint n instead of the first one, which
// the generated client built its URL from.
func (f *failover) rebase(req *http.Request, n int) (*http.Request, error) {
	if n == 0 {
		return req, nil
	}
	first, to := f.bases[0], f.bases[n]
	// The escaped path: a key's %2F must stay one.
	rest := strings.TrimPrefix(req.URL.EscapedPath(), strings.TrimSuffix(first.EscapedPath(), "/"))
	u, err := url.Parse(strings.TrimSuffix(to.String(), "/") + rest)
	if err != nil {
		return nil, err
	}
	u.RawQuery = req.URL.RawQuery
	r := req.Clone(req.Context())
	r.URL, r.Host = u, ""
	if req.Body != nil && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

// cannotConnect reports a failure to open a connection, before anything
// of the request was written.
func cannotConnect(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) && !errors.Is(err, context.DeadlineExceeded)
}
