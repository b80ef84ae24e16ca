package routed

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// Config configures a Client. Only Endpoints is required.
type Config struct {
	// Endpoints are base URLs of some of the cluster's nodes
	// ("http://10.0.0.1:8080"); one that answers is enough, the others
	// are tried when it does not. The client learns every node's API
	// address from the cluster and uses the endpoints' scheme for them.
	Endpoints []string
	// TLS, if set, makes the client call HTTPS endpoints, verifying the
	// nodes against TLS.CA (and presenting a client certificate if given).
	TLS *client.TLSFiles
	// Token, if set, is sent as "Authorization: Bearer <token>".
	Token string
	// Transport, if set, carries the requests (tests, proxies); TLS is
	// then the transport's business. Default: a pooled transport.
	Transport http.RoundTripper
	// MaxAttempts bounds how often one request is sent (default 5).
	MaxAttempts int
	// Backoff is the first wait between attempts, doubled each time up
	// to MaxBackoff, with full jitter (defaults 25 ms and 1 s). A
	// Retry-After the server gives is waited instead when longer, unless
	// it would cross the caller's deadline: then its answer is returned.
	Backoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt that gets no answer (a cut link
	// hangs where a stopped node refuses); the caller's context bounds
	// them all. Default 5 s.
	AttemptTimeout time.Duration
	// RefreshEvery is the least time between two refreshes of the route
	// table, the nodes or stale slots (default 100 ms): a storm of stale
	// answers costs one refresh per interval, not one per request.
	RefreshEvery time.Duration
	// NoRouteStream turns off following the route stream (GET
	// /v1/watch?resource=routes), which tells the client of every leader
	// change and table revision as the serving node learns it. Without
	// it the client learns from answers and refreshes.
	NoRouteStream bool
	// Logger receives what the client does in the background (refresh
	// failures, stream reconnects). Default: slog.Default().
	Logger *slog.Logger
}

// withDefaults fills in what c leaves unset.
func (c Config) withDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.Backoff == 0 {
		c.Backoff = 25 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = time.Second
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 5 * time.Second
	}
	if c.RefreshEvery == 0 {
		c.RefreshEvery = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports every problem of c (after defaults).
func (c Config) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("routed: Config.Endpoints is empty"))
	}
	scheme := ""
	for _, ep := range c.Endpoints {
		u, err := url.Parse(ep)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("routed: endpoint %q: %w", ep, err))
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			errs = append(errs, fmt.Errorf("routed: endpoint %q is not an http(s)://host:port URL", ep))
		case scheme != "" && u.Scheme != scheme:
			errs = append(errs, fmt.Errorf("routed: endpoints mix %s and %s", scheme, u.Scheme))
		default:
			scheme = u.Scheme
		}
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, errors.New("routed: Config.MaxAttempts must be at least 1"))
	}
	if c.Backoff < 0 || c.MaxBackoff < c.Backoff {
		errs = append(errs, errors.New("routed: Config.Backoff must be ≥ 0 and ≤ MaxBackoff"))
	}
	if c.AttemptTimeout < 0 || c.RefreshEvery < 0 {
		errs = append(errs, errors.New("routed: Config.AttemptTimeout and RefreshEvery must not be negative"))
	}
	return errors.Join(errs...)
}

// httpClient is the client every attempt goes through: no whole-request
// timeout (attempts and callers bound themselves with contexts, and a
// stream has none), connections kept per node.
func (c Config) httpClient() (*http.Client, error) {
	if c.Transport != nil {
		return &http.Client{Transport: c.Transport}, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.IdleConnTimeout = 90 * time.Second
	if c.TLS != nil {
		cfg, err := c.TLS.TLSConfig()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr}, nil
}
