package netguard

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	openDesc = prometheus.NewDesc("slotmeta_conn_open", "Connections open on a bounded listener.", []string{"listener"}, nil)
	maxDesc  = prometheus.NewDesc("slotmeta_conn_max", "A bounded listener's connection bound.", []string{"listener"}, nil)
	refused  = prometheus.NewDesc("slotmeta_conn_refused_total",
		"Connections closed by a listener's bounds: total (its bound reached), source (one source's bound reached), unproven (not authenticated within the grace), evicted (unproven, closed to make room for a new one at a bound).",
		[]string{"listener", "reason"}, nil)
	acceptErrs = prometheus.NewDesc("slotmeta_conn_accept_errors_total", "Accept errors a listener retried (out of descriptors, say).", []string{"listener"}, nil)
)

// Collector exports the stats of the listeners added to it (by their
// Config.Name): one per process, since the metrics' names are fixed.
type Collector struct {
	mu sync.Mutex
	ls []*Listener
}

// Add exports l's stats too.
func (c *Collector) Add(l *Listener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ls = append(c.ls, l)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- openDesc
	ch <- maxDesc
	ch <- refused
	ch <- acceptErrs
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ls := append([]*Listener(nil), c.ls...)
	c.mu.Unlock()
	for _, l := range ls {
		if l == nil {
			continue
		}
		s, name := l.Stats(), l.cfg.Name
		ch <- prometheus.MustNewConstMetric(openDesc, prometheus.GaugeValue, float64(s.Open), name)
		ch <- prometheus.MustNewConstMetric(maxDesc, prometheus.GaugeValue, float64(l.cfg.MaxConns), name)
		ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(s.RefusedTotal), name, "total")
		ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(s.RefusedSource), name, "source")
		ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(s.UnprovenClosed), name, "unproven")
		ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(s.Evicted), name, "evicted")
		ch <- prometheus.MustNewConstMetric(acceptErrs, prometheus.CounterValue, float64(s.AcceptErrors), name)
	}
}
