package routing_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

func BenchmarkResolveBatch(b *testing.B) {
	r := routing.NewRouter()
	tb, _ := routing.InitialTable(8)
	r.SetTable(tb)
	for g := slotstore.GroupID(1); g <= 8; g++ {
		r.SetLeader(g, slotstore.NodeID(g), 1)
		r.SetConfigEpoch(g, 1)
	}
	for _, size := range []int{1, 64, 1024} {
		keys := make([][]byte, size)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "user-%08d", i)
		}
		b.Run(fmt.Sprintf("keys=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]slotstore.Route, 0, size)
			iters := 0
			for b.Loop() {
				var err error
				dst, err = r.Load().ResolveBatch(keys, dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				iters++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*size), "ns/key")
		})
	}
}

func BenchmarkHashSlotOf(b *testing.B) {
	for _, n := range []int{8, 32, 256} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + i%26)
		}
		b.Run(fmt.Sprintf("bytes/len=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			var sink slotstore.HashSlot
			for b.Loop() {
				sink += slotstore.HashSlotOf(key)
			}
			_ = sink
		})
		skey := string(key)
		b.Run(fmt.Sprintf("string/len=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			var sink slotstore.HashSlot
			for b.Loop() {
				sink += slotstore.HashSlotOfString(skey)
			}
			_ = sink
		})
	}
}
