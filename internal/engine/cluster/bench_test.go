package cluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// BenchmarkProposer measures the whole write path of one real node — proposer,
// dragonboat (fsynced log), FSM apply into Pebble — with 64 concurrent
// writers of distinct keys and 200-byte values. It reports writes/s and the
// mean number of commands per Raft entry.
//
//	go test -run='^$' -bench=Proposer -benchtime=3s ./internal/engine/cluster/
func BenchmarkProposer(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", conc), func(b *testing.B) {
			dir := b.TempDir()
			cfg := Config{NodeID: 1, DataDir: dir, RaftAddr: freeAddrB(b), GroupCount: 8,
				RTT: 10 * time.Millisecond, ElectionRTT: 10, HeartbeatRTT: 1}
			n := startNodeB(b, cfg)
			defer n.Close()
			value := make([]byte, 200)
			var seq atomic.Int64
			e0, c0 := n.Stats().Entries, n.Stats().Commands
			b.SetParallelism((conc + 1) / 2) // RunParallel starts GOMAXPROCS × this many goroutines
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					key := fmt.Sprintf("bench-%d", seq.Add(1))
					res, _, err := n.Propose(ctx, &meta.PutKV{Key: key, Value: value})
					cancel()
					if err != nil || !res.OK() {
						b.Errorf("put %s: %v %+v", key, err, res)
						return
					}
				}
			})
			b.StopTimer()
			e1, c1 := n.Stats().Entries, n.Stats().Commands
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
			if e1 > e0 {
				b.ReportMetric(float64(c1-c0)/float64(e1-e0), "cmds/entry")
			}
		})
	}
}
