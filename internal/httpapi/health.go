package httpapi

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

type statusJSON struct {
	Status string `json:"status"`
}

// healthz is GET /healthz: the process answers.
func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	a.writeJSON(w, r, http.StatusOK, statusJSON{Status: "ok"})
}

// readyz is GET /readyz: 200 when the node can serve every hash slot, else
// 503 with the reason. A reason that is not already a 503 code (a plain
// error, say) is reported as route_not_ready, so readiness is never a 500.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) error {
	// A node the cluster is draining or removed must not get new traffic
	// from a load balancer, however well its replicas run.
	if why := a.leaving(); why != "" {
		return &slotstore.Error{Code: slotstore.CodeRouteNotReady, Message: why}
	}
	if err := a.be.Ready(); err != nil {
		e := toError(err)
		if httpStatus(e.Code) != http.StatusServiceUnavailable {
			e = &slotstore.Error{Code: slotstore.CodeRouteNotReady, Message: fmt.Sprintf("not ready: %v", err), Err: err}
		}
		return e
	}
	a.writeJSON(w, r, http.StatusOK, statusJSON{Status: "ok"})
	return nil
}

// leaving says why this node is on its way out of the cluster ("" when it
// is not): draining (its replicas and leaders move off) or removed.
func (a *api) leaving() string {
	self := a.op.NodeID()
	for _, n := range a.op.Nodes() {
		if n.ID != self {
			continue
		}
		switch n.State {
		case slotstore.NodeDraining:
			return fmt.Sprintf("node %d is draining: its replicas and leaders are moving to other nodes; send requests elsewhere", self)
		case slotstore.NodeRemoved:
			return fmt.Sprintf("node %d was removed from the cluster: it serves nothing; stop it", self)
		}
	}
	return ""
}

// metricsHandler serves g in the Prometheus exposition format. A collector
// that fails leaves its metrics out instead of failing the scrape.
func (a *api) metricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      promLogger{a},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// promLogger adapts the API's logger to promhttp.Logger.
type promLogger struct{ a *api }

func (l promLogger) Println(v ...any) { l.a.log.Error("httpapi: metrics: " + fmt.Sprint(v...)) }

// openAPI serves the contract.
func (a *api) openAPI(spec []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(spec)
	}
}
