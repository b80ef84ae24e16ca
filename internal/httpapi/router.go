package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"slotmeta/internal/audit"
	"slotmeta/internal/auth"
	"slotmeta/internal/slotstore"
)

// api holds what the handlers share. It is immutable after New.
type api struct {
	be      Backend
	op      slotstore.Operator // be.Operator(), asked once
	log     *slog.Logger
	maxBody int64
	auth    *auth.Authenticator
	limiter *auth.Limiter
	audit   *audit.Recorder
	metrics *metrics
	// security reports how the node is secured (GET /v1/cluster/security).
	security func() slotstore.SecurityStatus
}

// New returns the HTTP handler of one node's API. It registers its metrics on
// cfg.Registerer, so it fails if collectors of the same names but other
// shapes are registered there.
func New(cfg Config) (http.Handler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	a := &api{be: cfg.Backend, op: cfg.Backend.Operator(), log: cfg.Logger, maxBody: cfg.MaxBodyBytes, auth: cfg.Auth, limiter: cfg.Limiter,
		audit: cfg.Audit, metrics: m, security: cfg.Security}

	r := chi.NewRouter()
	r.Use(m.instrument, a.recoverPanics, a.validText, a.authenticate, withDeadline(cfg.RequestTimeout), routeOnEscapedPath, middleware.GetHead)
	// Set before any sub-router is made: chi hands them down at Mount.
	r.NotFound(a.notFound)
	var flat chi.Routes // every route, once registered
	r.MethodNotAllowed(a.methodNotAllowed(&flat))

	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.handle(a.readyz))
	r.Method(http.MethodGet, "/metrics", a.metricsHandler(cfg.Gatherer))
	if cfg.OpenAPI != nil {
		r.Get("/openapi.yaml", a.openAPI(cfg.OpenAPI))
	}
	if cfg.Console != nil {
		r.Mount("/console", a.jsonErrors(cfg.Console))
	}
	if cfg.Docs != nil {
		r.Method(http.MethodGet, "/docs", a.jsonErrors(cfg.Docs))
		r.Method(http.MethodGet, "/docs/*", a.jsonErrors(cfg.Docs))
	}
	r.Route("/v1", func(r chi.Router) {
		r.Route("/users", userRoutes{a}.mount)
		r.Route("/kv", kvRoutes{a}.mount)
		r.Route("/users/{uid}/devices", deviceRoutes{a}.mount)
		r.Route("/users/{uid}/plugins", pluginRoutes{a}.mountUser)
		r.Route("/system-uids", systemUIDRoutes{a}.mount)
		r.Route("/plugins", pluginRoutes{a}.mount)
		r.Route("/channels", channelRoutes{a}.mount)
		r.Route("/users/{uid}/memberships", membershipRoutes{a}.mount)
		r.Route("/users/{uid}/cmd-bindings", cmdBindingRoutes{a}.mount)
		r.Route("/channels/{channel_type}/{channel_id}/runtime", runtimeRoutes{a}.mount)
		r.Route("/channels/{channel_type}/{channel_id}/migrations", migrationRoutes{a}.mount)
		r.Route("/channels/{channel_type}/{channel_id}/events", eventRoutes{a}.mount)
		r.Route("/cluster", clusterRoutes{a}.mount)
	})
	if flat, err = flatRoutes(r); err != nil {
		return nil, err
	}
	return r, nil
}
