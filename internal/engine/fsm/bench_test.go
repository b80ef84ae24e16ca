package fsm_test

import (
	"fmt"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// BenchmarkUpdate measures the apply path: one Update of one entry holding
// n PutKV commands with 200-byte values, over a working set of 16k keys.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("cmds=%d", n), func(b *testing.B) {
			db, err := store.Open(b.TempDir(), nil) // production defaults
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := fsm.New(fsm.Config{Group: 1, DB: db, Genesis: allSlots()})
			if _, err := s.Open(nil); err != nil {
				b.Fatal(err)
			}
			// Pre-encode a ring of entries so the loop measures apply only.
			const keys = 1 << 14
			value := make([]byte, 200)
			for i := range value {
				value[i] = byte(i)
			}
			ring := make([][]byte, max(1, keys/n))
			k := 0
			for i := range ring {
				raw := make([][]byte, n)
				for j := range raw {
					key := fmt.Sprintf("bench-key-%05d", k%keys)
					k++
					raw[j] = mustEncode(&meta.PutKV{
						Header: meta.Header{HashSlot: slotstore.HashSlotOfString(key), TimeMs: 1},
						Key:    key, Value: value,
					})
				}
				ring[i] = meta.EncodeEntry(raw)
			}
			entries := make([]sm.Entry, 1)
			var index uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				index++
				entries[0] = sm.Entry{Index: index, Cmd: ring[i%len(ring)]}
				if _, err := s.Update(entries); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "cmds/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cmd")
		})
	}
}
