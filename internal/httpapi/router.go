package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
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
	// stopping ends the watch streams (Config.Stopping; nil: never).
	stopping <-chan struct{}
	// streams are the multiplexed watch streams this node serves.
	streams *muxStreams
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
		audit: cfg.Audit, metrics: m, security: cfg.Security, stopping: cfg.Stopping, streams: &muxStreams{}}

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
		// A request the console hands back starts afresh: without the
		// routing state of its way to /console, which chi would follow.
		api := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			r.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, nil)))
		})
		r.Mount("/console", a.jsonErrors(cfg.Console(api)))
	}
	if cfg.Docs != nil {
		r.Method(http.MethodGet, "/docs", a.jsonErrors(cfg.Docs))
		r.Method(http.MethodGet, "/docs/*", a.jsonErrors(cfg.Docs))
	}
	r.Route("/v1", a.mountV1)
	if flat, err = flatRoutes(r); err != nil {
		return nil, err
	}
	return r, nil
}

// route is one row of the route table: a method and pattern on its family's
// sub-router, and the handler that serves them.
type route struct {
	method, pattern string
	h               handlerFunc
}

// family returns the mount function of a sub-router that serves routes.
func (a *api) family(routes []route) func(chi.Router) {
	return func(r chi.Router) {
		for _, rt := range routes {
			r.Method(rt.method, rt.pattern, a.handle(rt.h))
		}
	}
}

// mountV1 registers /v1: the route table of the whole API, one sub-router
// per resource family. The handlers live with their resource.
func (a *api) mountV1(r chi.Router) {
	const (
		get, put, post, del = http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete
		chanPath            = "/{channel_type}/{channel_id}"
	)
	users, kv, devices, plugins, sys := userRoutes{a}, kvRoutes{a}, deviceRoutes{a}, pluginRoutes{a}, systemUIDRoutes{a}
	channels, lists, memberships, bindings := channelRoutes{a}, channelListRoutes{a}, membershipRoutes{a}, cmdBindingRoutes{a}
	runtime, migrations, events := runtimeRoutes{a}, migrationRoutes{a}, eventRoutes{a}
	cluster, balancer, groups, tasks, backups := clusterRoutes{a}, balancerRoutes{a}, groupRoutes{a}, taskRoutes{a}, backupRoutes{a}

	r.Get("/watch", a.handle(a.watchStream))
	r.Get("/watch/stream", a.handle(a.openMux))
	r.Post("/watch/stream/{stream_id}", a.handle(a.addToMux))
	r.Delete("/watch/stream/{stream_id}/{watch_id}", a.handle(a.cancelInMux))
	r.Post("/batch/kv/get", a.handle(kv.batchGetKV))
	r.Post("/batch/kv/write", a.handle(kv.batchWriteKV))
	r.Post("/batch/users/get", a.handle(users.batchGetUsers))
	r.Post("/batch/channels/get", a.handle(channels.batchGetChannels))
	r.Post("/batch/runtime/get", a.handle(runtime.batchGetRuntime))
	r.Route("/users", a.family([]route{
		{get, "/", users.listUsers},
		{post, "/", users.createUser},
		{get, "/{uid}", userRow.fetch(a)},
		{put, "/{uid}", users.putUser},
		{del, "/{uid}", userRow.remove(a)},
	}))
	r.Route("/kv", a.family([]route{
		{get, "/", kv.listKV},
		{get, "/{key}", kvRow.fetch(a)},
		{put, "/{key}", kv.putKV},
		{del, "/{key}", kv.deleteKV},
	}))
	r.Route("/users/{uid}/devices", a.family([]route{
		{get, "/", devices.listDevices},
		{get, "/{device_flag}", deviceRow.fetch(a)},
		{put, "/{device_flag}", writeWith(a, deviceRow, putDevice)},
		{del, "/{device_flag}", deviceRow.remove(a)},
	}))
	r.Route("/users/{uid}/plugins", a.family([]route{
		{get, "/", plugins.listUserPlugins},
		{put, "/{plugin_no}", plugins.putPlugin},
		{del, "/{plugin_no}", pluginRow.remove(a)},
	}))
	r.Route("/system-uids", a.family([]route{
		{get, "/", sys.listSystemUIDs},
		{put, "/{uid}", sys.putSystemUID},
		{del, "/{uid}", systemUIDRow.remove(a)},
	}))
	r.Route("/plugins", a.family([]route{
		{get, "/{plugin_no}/users", plugins.listPluginUsers},
	}))
	r.Route("/channels", a.family(slices.Concat([]route{
		{post, "/", channels.createChannel},
		{get, chanPath, channelRow.fetch(a)},
		{put, chanPath, channels.putChannel},
		{del, chanPath, channelRow.remove(a)},
	}, lists.routes(meta.ListSubscribers), lists.routes(meta.ListDenylist), lists.routes(meta.ListAllowlist))))
	r.Route("/users/{uid}/memberships", a.family([]route{
		{get, "/", memberships.listMemberships},
		{get, chanPath, membershipRow.fetch(a)},
		{put, chanPath, writeWith(a, membershipRow, putMembership)},
		{del, chanPath, membershipRow.remove(a)},
		{post, chanPath + "/read", writeWith(a, membershipRow, readMembership)},
		{post, chanPath + "/hide", writeWith(a, membershipRow, hideMembership)},
		{post, chanPath + "/activate", memberships.activateMembership},
	}))
	r.Route("/users/{uid}/cmd-bindings", a.family([]route{
		{get, "/", bindings.listCmdBindings},
		{get, chanPath, cmdBindingRow.fetch(a)},
		{put, chanPath, writeWith(a, cmdBindingRow, putCmdBinding)},
		{del, chanPath, cmdBindingRow.remove(a)},
		{post, chanPath + "/ack", writeWith(a, cmdBindingRow, ackCmdBinding)},
	}))
	r.Route("/channels/{channel_type}/{channel_id}/runtime", a.family([]route{
		{get, "/", runtimeRow.fetch(a)},
		{post, "/", runtime.createRuntime},
		{put, "/", runtime.putRuntime},
		{del, "/", runtimeRow.remove(a)},
		{post, "/retention", writeWith(a, runtimeRow, advanceRetention)},
	}))
	r.Route("/channels/{channel_type}/{channel_id}/migrations", a.family([]route{
		{get, "/", migrations.listMigrations},
		{post, "/", migrations.createMigration},
		{get, "/{task_id}", migrationRow.fetch(a)},
		{post, "/{task_id}/advance", migrations.advanceMigration},
		{post, "/{task_id}/abort", migrations.abortMigration},
	}))
	r.Route("/channels/{channel_type}/{channel_id}/events", a.family([]route{
		{get, "/", events.listEvents},
		{post, "/", events.appendEvent},
	}))
	r.Route("/cluster", a.family([]route{
		{get, "/", cluster.getCluster},
		{get, "/nodes", cluster.listNodes},
		{post, "/nodes", cluster.registerNode},
		{del, "/nodes/{id}", bodyless(balancer.removeNode)},
		{post, "/nodes/{id}/drain", bodyless(balancer.drainNode)},
		{get, "/balancer", balancer.getBalancer},
		{put, "/balancer", balancer.putBalancer},
		{get, "/balancer/plan", balancer.getBalancerPlan},
		{get, "/routes", cluster.getRoutes},
		{get, "/groups", groups.listGroups},
		{post, "/groups", tasks.createGroup},
		{get, "/groups/{id}", groups.getGroup},
		{del, "/groups/{id}", bodyless(tasks.retireGroup)},
		{post, "/groups/{id}/split", startOnGroup(tasks, tasks.splitGroup)},
		{post, "/groups/{id}/merge", startOnGroup(tasks, tasks.mergeGroup)},
		{post, "/groups/{id}/leader-transfer", changeGroup(a, groups.transferLeader)},
		{get, "/groups/{id}/leader-transfer/preflight", groups.preflightTransfer},
		{put, "/groups/{id}/preferred-leader", changeGroup(a, groups.setPreferredLeader)},
		{post, "/groups/{id}/recover", changeGroup(a, groups.recoverGroup)},
		{post, "/groups/{id}/check", bodyless(groups.checkGroup)},
		{get, "/recoveries", groups.listRecoveries},
		{get, "/decisions", groups.listDecisions},
		{get, "/audit", cluster.listAudit},
		{get, "/security", cluster.getSecurity},
		{post, "/groups/{id}/replica-moves", startOnGroup(tasks, tasks.createReplicaMove)},
		{get, "/tasks", tasks.listTasks},
		{get, "/tasks/{id}", tasks.getTask},
		{post, "/tasks/{id}/cancel", bodyless(tasks.cancelTask)},
		{post, "/hash-slots/{slot}/migrations", tasks.createSlotMigration},
		{post, "/routes/resolve", cluster.resolveRoutes},
		{post, "/backups", bodyless(backups.startBackup)},
		{get, "/backups", backups.listBackups},
		{get, "/backups/{id}", backups.getBackup},
	}))
}
