package meta_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func benchPutKV() *meta.PutKV {
	return routed(&meta.PutKV{
		Header: meta.Header{TimeMs: 1_700_000_000_000, IdempotencyKey: "req-0123456789"},
		Key:    "channel:42:meta", Value: binaryValue(200),
		Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: 12345},
	})
}

func BenchmarkEncodeCommand(b *testing.B) {
	c := benchPutKV()
	b.SetBytes(int64(len(mustEncode(c))))
	b.ReportAllocs()
	for b.Loop() {
		_ = mustEncode(c)
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	enc := mustEncode(benchPutKV())
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := meta.DecodeCommand(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEntryCommands() [][]byte {
	cmds := make([][]byte, 256)
	for i := range cmds {
		c := benchPutKV()
		c.Key = fmt.Sprintf("channel:%d", i)
		cmds[i] = mustEncode(routed(c))
	}
	return cmds
}

func BenchmarkEncodeEntry(b *testing.B) {
	cmds := benchEntryCommands()
	b.SetBytes(int64(len(meta.EncodeEntry(cmds))))
	b.ReportAllocs()
	for b.Loop() {
		_ = meta.EncodeEntry(cmds)
	}
}

func BenchmarkDecodeEntry(b *testing.B) {
	data := meta.EncodeEntry(benchEntryCommands())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		cmds, err := meta.DecodeEntry(data)
		if err != nil || len(cmds) != 256 {
			b.Fatal(err)
		}
	}
}
