package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus collectors.
type metrics struct {
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	authFail prometheus.Counter
	// The watch streams (GET /v1/watch): how many are open, the events
	// they sent by name, and the error events that ended them by code
	// (slow_consumer, compacted, route_not_ready, …): an operator sees a
	// watcher cut, not only the watcher.
	watchStreams prometheus.Gauge
	watchMuxed   prometheus.Gauge // the watches multiplexed streams carry
	watchEvents  *prometheus.CounterVec
	watchEnds    *prometheus.CounterVec
}

// newMetrics registers the API's collectors on reg. Collectors that an
// earlier New registered on reg are reused.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "slotmeta",
		Subsystem: "http",
		Name:      "request_duration_seconds",
		Help:      "Latency of HTTP requests by method, chi route pattern and status code.",
		Buckets:   []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route", "code"})
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "slotmeta",
		Subsystem: "http",
		Name:      "requests_in_flight",
		Help:      "HTTP requests being served.",
	})
	authFail := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "slotmeta",
		Subsystem: "http",
		Name:      "auth_failures_total",
		Help:      "Requests refused for missing or unknown credentials (401).",
	})
	watchStreams := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "slotmeta", Subsystem: "watch", Name: "streams",
		Help: "Watch streams (GET /v1/watch and GET /v1/watch/stream) being served.",
	})
	watchMuxed := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "slotmeta", Subsystem: "watch", Name: "stream_watches",
		Help: "Watches carried by the multiplexed watch streams (GET /v1/watch/stream).",
	})
	watchEvents := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "slotmeta", Subsystem: "watch", Name: "events_total",
		Help: "Events the watch streams sent, by event: change, progress, routes, error.",
	}, []string{"event"})
	watchEnds := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "slotmeta", Subsystem: "watch", Name: "ended_total",
		Help: "Watches ended by an error event, by its code (slow_consumer, compacted, route_not_ready, …).",
	}, []string{"code"})
	m := &metrics{}
	var err error
	if m.watchStreams, err = register(reg, watchStreams); err != nil {
		return nil, err
	}
	if m.watchMuxed, err = register(reg, watchMuxed); err != nil {
		return nil, err
	}
	if m.watchEvents, err = register(reg, watchEvents); err != nil {
		return nil, err
	}
	if m.watchEnds, err = register(reg, watchEnds); err != nil {
		return nil, err
	}
	if m.authFail, err = register(reg, authFail); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, duration); err != nil {
		return nil, err
	}
	if m.inFlight, err = register(reg, inFlight); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) authFailed() { m.authFail.Inc() }

// register registers c on reg, or returns the equal collector already there.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// instrument counts in-flight requests and observes each one's latency
// under its method, route pattern (not its path, so keys never become label
// values) and status code.
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		defer func() {
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			route := "unmatched"
			if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePattern() != "" {
				route = rctx.RoutePattern()
			}
			m.duration.WithLabelValues(methodLabel(r.Method), route, strconv.Itoa(status)).
				Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(ww, r)
	})
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}
