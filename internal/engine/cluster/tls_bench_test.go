package cluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// BenchmarkReplicatedWritesTLS: what mutual TLS between the nodes costs —
// writes proposed through a node that does not lead their group (a peer
// RPC forward), replicated to three nodes over Raft, with and without TLS
// on both (go test -run - -bench ReplicatedWritesTLS ./internal/engine/cluster).
func BenchmarkReplicatedWritesTLS(b *testing.B) {
	for _, withTLS := range []bool{false, true} {
		b.Run(fmt.Sprintf("tls=%v", withTLS), func(b *testing.B) {
			var ca *slotstoretest.CA
			if withTLS {
				ca = slotstoretest.NewCA(b, "bench")
			}
			c := slotstoretest.Start(b, slotstoretest.Options{Nodes: 3, Groups: 1, Tune: func(cfg *cluster.Config) {
				if ca != nil {
					cfg.TLS = ca.Issue(b, fmt.Sprintf("node-%d", cfg.NodeID))
				}
			}})
			var via *cluster.Node // a node that forwards every write
			for _, n := range c.Nodes {
				if st, ok := n.Routes().Group(1); ok && st.Leader != 0 && st.Leader != n.NodeID() {
					via = n
					break
				}
			}
			if via == nil {
				b.Fatal("no follower of group 1")
			}
			value := make([]byte, 200)
			var seq atomic.Int64
			b.SetParallelism(32) // RunParallel: GOMAXPROCS × 32 writers
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					key := fmt.Sprintf("tls-bench-%d", seq.Add(1))
					res, _, err := via.Propose(ctx, &meta.PutKV{Key: key, Value: value})
					cancel()
					if err != nil || !res.OK() {
						b.Errorf("put %s: %v %+v", key, err, res)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
		})
	}
}
