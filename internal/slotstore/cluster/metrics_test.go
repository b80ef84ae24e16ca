package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"slotmeta/internal/slotstore/cluster"
	"slotmeta/internal/slotstore/meta"
	"slotmeta/internal/slotstore/slotstoretest"
)

// TestStoreMetrics: a node exports its store's memory (block cache,
// memtables) and disk use, and stops collecting them when it closes.
func TestStoreMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 1,
		Tune: func(cfg *cluster.Config) { cfg.Registerer = reg }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Nodes[0].Propose(ctx, &meta.PutKV{Key: "m", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	values := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if g := m.GetGauge(); g != nil {
					out[mf.GetName()] += g.GetValue()
				}
			}
		}
		return out
	}
	got := values()
	for _, name := range []string{"slotmeta_store_block_cache_bytes", "slotmeta_store_memtable_bytes", "slotmeta_store_file_cache_bytes", "slotmeta_store_disk_bytes"} {
		if _, ok := got[name]; !ok {
			t.Fatalf("%s missing from %v", name, got)
		}
	}
	if got["slotmeta_store_memtable_bytes"] <= 0 || got["slotmeta_store_disk_bytes"] <= 0 {
		t.Fatalf("memtables %v, disk %v", got["slotmeta_store_memtable_bytes"], got["slotmeta_store_disk_bytes"])
	}
	if err := c.Nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := values()["slotmeta_store_memtable_bytes"]; ok {
		t.Fatal("a closed node still reports its store")
	}
}
