package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultRequestTimeout = 10 * time.Second
)

// Config configures the HTTP API of one node. Every field but Backend has a
// usable zero value.
type Config struct {
	// Backend serves every request. Required.
	Backend Backend

	// Registerer receives the API's metrics; Gatherer is what GET /metrics
	// serves. Every node of a test process has its own registry: the global
	// default registry is never used. If only one of the two is set it must
	// implement the other interface too (a *prometheus.Registry does); if
	// neither is set, New creates a private registry.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer

	// Logger receives panics, 5xx answers (Error) and rejected requests
	// (Debug). Default: slog.Default().
	Logger *slog.Logger

	// MaxBodyBytes bounds a request body; a larger one answers 413
	// payload_too_large. Default: DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64

	// RequestTimeout is the deadline of every request's context.
	// Default: DefaultRequestTimeout (10 s).
	RequestTimeout time.Duration

	// Stopping, if set, is closed when the server starts to shut down: the
	// watch streams end then — a data watch with a route_not_ready error
	// event carrying its cursor, to resume on another node — so that a
	// graceful shutdown does not wait for them (a stream never ends by
	// itself). cmd/server closes it from http.Server.RegisterOnShutdown.
	Stopping <-chan struct{}

	// Console, if non-nil, builds the handler mounted at /console. A chi
	// router sees paths relative to /console; any other handler sees the
	// full path. api serves a request as a new one to this API, from the
	// top of its middleware (authentication included): the console
	// forwards its live tails' watch stream to it with the session's token.
	Console func(api http.Handler) http.Handler

	// OpenAPI, if non-nil, is served as GET /openapi.yaml.
	OpenAPI []byte

	// Docs, if non-nil, serves GET /docs (a human-readable rendering of the
	// contract) and GET /docs/* (its assets); it sees the full path. Other
	// methods answer 405 like any route's.
	Docs http.Handler

	// Auth checks bearer tokens and roles (package auth); nil or without
	// tokens: every request is allowed (the server then listens on loopback
	// only).
	Auth *auth.Authenticator

	// Limiter, if non-nil, counts failed authentications per source and
	// answers 429 rate_limited to a source that failed too often.
	Limiter *auth.Limiter

	// Audit, if non-nil, records every admin action (package audit).
	Audit *audit.Recorder

	// Security, if non-nil, reports how the node is secured (GET
	// /v1/cluster/security); nil answers with what the API itself knows.
	Security func() slotstore.SecurityStatus
}

// withDefaults returns c with every zero field that has a default filled in.
func (c Config) withDefaults() Config {
	if c.Registerer == nil && c.Gatherer == nil {
		reg := prometheus.NewRegistry()
		c.Registerer, c.Gatherer = reg, reg
	}
	if c.Gatherer == nil {
		if g, ok := c.Registerer.(prometheus.Gatherer); ok {
			c.Gatherer = g
		}
	}
	if c.Registerer == nil {
		if r, ok := c.Gatherer.(prometheus.Registerer); ok {
			c.Registerer = r
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c
}

// Validate reports what the defaults cannot fix: a missing Backend, negative
// limits, or a Registerer/Gatherer pair of which only one half is known.
func (c Config) Validate() error {
	var errs []error
	if c.Backend == nil {
		errs = append(errs, errors.New("httpapi: Config.Backend is required"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("httpapi: Config.MaxBodyBytes must not be negative"))
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, errors.New("httpapi: Config.RequestTimeout must not be negative"))
	}
	d := c.withDefaults()
	if d.Registerer == nil || d.Gatherer == nil {
		errs = append(errs, errors.New("httpapi: Config.Registerer and Config.Gatherer must both be set unless one of them implements both interfaces"))
	}
	return errors.Join(errs...)
}
