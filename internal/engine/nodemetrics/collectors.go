package nodemetrics

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The collectors that read the node at scrape time: the cluster's health
// (on the controller leader), the proposal queues, the store.

// healthCollector reports node and group health at scrape time, on the
// controller leader only (elsewhere it has no series: one node speaks for
// the cluster, so dashboards do not sum several views).
type healthCollector struct {
	observed                 func(now time.Time) ([]slotstore.NodeHealth, []slotstore.GroupView, bool)
	now                      func() time.Time
	unreachable, under, live *prometheus.Desc
	diverged, checked        *prometheus.Desc
}

func (h *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{h.unreachable, h.under, h.live, h.diverged, h.checked} {
		ch <- d
	}
}

func (h *healthCollector) Collect(ch chan<- prometheus.Metric) {
	health, views, leads := h.observed(h.now())
	if !leads {
		return
	}
	for _, nh := range health {
		v := 0.0
		if nh.Health == slotstore.NodeUnreachable {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(h.unreachable, prometheus.GaugeValue, v, strconv.FormatUint(uint64(nh.Node), 10))
	}
	for _, g := range views {
		label := strconv.FormatUint(uint64(g.ID), 10)
		v := 0.0
		if g.Health != slotstore.GroupHealthy {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(h.under, prometheus.GaugeValue, v, label)
		ch <- prometheus.MustNewConstMetric(h.live, prometheus.GaugeValue, float64(g.LiveVoters), label)
		if c := g.LastCheck; c != nil {
			v = 0
			if c.Verdict.Alarming() {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(h.diverged, prometheus.GaugeValue, v, label)
			ch <- prometheus.MustNewConstMetric(h.checked, prometheus.GaugeValue, float64(c.AtMs)/1000, label)
		}
	}
}

// queueCollector reports each local proposer's queue depth at scrape time.
type queueCollector struct {
	depths func() map[slotstore.GroupID]int
	desc   *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for id, depth := range q.depths() {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(depth),
			strconv.FormatUint(uint64(id), 10))
	}
}

// storeCollector reports the store's memory and disk at scrape time: the
// bounded parts of a node's memory outside the Go heap (block cache,
// memtables) and the open-file cache, so a soak can tell a filling cache
// from a leak.
type storeCollector struct {
	stats                                      func() store.Stats
	cache, memtables, files, disk, raft, whole *prometheus.Desc
	usage                                      diskUsage
	scrapeGate                                 // stopped before the store closes
}

// scrapeGate lets a collector read what closes before the registry lets go
// of it: a scrape in progress holds it for reading, stop waits for it, and
// after stop nothing is collected.
type scrapeGate struct {
	mu     sync.RWMutex
	closed bool
}

// stop ends collection.
func (g *scrapeGate) stop() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// collect runs f unless stopped.
func (g *scrapeGate) collect(f func()) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		f()
	}
}

func newStoreCollector(dataDir string, stats func() store.Stats) *storeCollector {
	return &storeCollector{stats: stats,
		cache:     prometheus.NewDesc("slotmeta_store_block_cache_bytes", "Bytes in the store's block cache (bounded by its size).", nil, nil),
		memtables: prometheus.NewDesc("slotmeta_store_memtable_bytes", "Bytes of the store's memtables, including those waiting to be flushed or released.", nil, nil),
		files:     prometheus.NewDesc("slotmeta_store_file_cache_bytes", "Bytes held by the store's cache of open sstables.", nil, nil),
		disk: prometheus.NewDesc("slotmeta_store_disk_bytes",
			"Bytes of the store's files as the store counts them (logical sizes: its preallocated WAL counts what it wrote; slotmeta_data_dir_disk_bytes has what the disk holds).", nil, nil),
		raft: prometheus.NewDesc("slotmeta_raft_disk_bytes",
			"Bytes the disk holds for the Raft log, snapshots and NodeHost files (the data directory's raft/: allocated blocks, preallocated WALs included), summed at most every 30 s.", nil, nil),
		whole: prometheus.NewDesc("slotmeta_data_dir_disk_bytes",
			"Bytes the disk holds for the whole data directory (allocated blocks, as du counts them; store, Raft data, backups under it), summed at most every 30 s.", nil, nil),
		usage: diskUsage{path: dataDir, raft: filepath.Join(dataDir, "raft"), every: 30 * time.Second},
	}
}

func (s *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.cache
	ch <- s.memtables
	ch <- s.files
	ch <- s.disk
	ch <- s.raft
	ch <- s.whole
}

func (s *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s.collect(func() { s.collectStore(ch) })
}

func (s *storeCollector) collectStore(ch chan<- prometheus.Metric) {
	m := s.stats()
	ch <- prometheus.MustNewConstMetric(s.cache, prometheus.GaugeValue, float64(m.BlockCacheBytes))
	ch <- prometheus.MustNewConstMetric(s.memtables, prometheus.GaugeValue, float64(m.MemTableBytes))
	ch <- prometheus.MustNewConstMetric(s.files, prometheus.GaugeValue, float64(m.FileCacheBytes))
	ch <- prometheus.MustNewConstMetric(s.disk, prometheus.GaugeValue, float64(m.DiskBytes))
	whole, raft := s.usage.bytes(time.Now())
	ch <- prometheus.MustNewConstMetric(s.raft, prometheus.GaugeValue, float64(raft))
	ch <- prometheus.MustNewConstMetric(s.whole, prometheus.GaugeValue, float64(whole))
}

// diskUsage is the bytes the disk holds for the files of the data directory
// and of its raft/ part — their allocated blocks, as du counts them: Pebble
// preallocates its WALs, so a young store of a few KB holds 18 MB (issue
// 30). One walk gives both sums, taken again when asked after every has
// passed: a node at rest is scraped and sampled by its own history every
// 10 s, and walking 256 groups' files twice each time was a twentieth of its
// idle CPU (issue 31).
type diskUsage struct {
	path, raft string
	every      time.Duration

	mu              sync.Mutex
	at              time.Time
	whole, raftPart int64
}

func (d *diskUsage) bytes(now time.Time) (whole, raft int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.at.IsZero() && now.Sub(d.at) < d.every {
		return d.whole, d.raftPart
	}
	raftPrefix := d.raft + string(filepath.Separator)
	whole, raft = 0, 0
	_ = filepath.WalkDir(d.path, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil // a file gone while walking is not counted
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		n := info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n = st.Blocks * 512 // stat(2): 512-byte units
		}
		whole += n
		if strings.HasPrefix(path, raftPrefix) {
			raft += n
		}
		return nil
	})
	d.at, d.whole, d.raftPart = now, whole, raft
	return whole, raft
}
