package digests

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/time/rate"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// paceChunk is how many bytes are hashed between two waits on the pace.
// Each wait parks and wakes the worker: at 64 KiB (128 waits a second at
// the default pace) the wake-ups cost twice what the hashing did; at 1 MiB
// a paced check costs about 2 % of a core (bench/README.md). The context
// is looked at as often.
const paceChunk = 1 << 20

// Digest hashes the rows of group g in r, per hash slot, the system records
// as slotstore.SystemSlot (last). pace, if not nil, is waited on for every
// paceChunk bytes read (its burst must be at least paceChunk); ctx ends the
// walk early.
func Digest(ctx context.Context, r pebble.Reader, g slotstore.GroupID, pace *rate.Limiter) ([]slotstore.SlotDigest, error) {
	prefix := meta.GroupPrefix(g)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("checks: iterate group %d: %w", g, err)
	}
	defer it.Close()
	skip := meta.SysKey(g, meta.SysRestored)
	var (
		out     []slotstore.SlotDigest
		cur     *slotstore.SlotDigest
		h       = xxhash.New()
		unpaced int
		lenBuf  [binary.MaxVarintLen64]byte
	)
	finish := func() {
		if cur != nil {
			cur.Hash = h.Sum64()
			out = append(out, *cur)
			cur = nil
		}
	}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		if len(k) < len(prefix)+2 || bytes.Equal(k, skip) {
			continue
		}
		slot := slotstore.HashSlot(binary.BigEndian.Uint16(k[len(prefix):]))
		if cur == nil || cur.Slot != slot {
			finish()
			cur = &slotstore.SlotDigest{Slot: slot}
			h.Reset()
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("checks: read group %d: %w", g, err)
		}
		_, _ = h.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(k)))])
		_, _ = h.Write(k)
		_, _ = h.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(v)))])
		_, _ = h.Write(v)
		cur.Rows++
		cur.Bytes += uint64(len(k) + len(v))
		if unpaced += len(k) + len(v); unpaced >= paceChunk {
			if err := waitPace(ctx, pace, unpaced); err != nil {
				return nil, err
			}
			unpaced = 0
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("checks: iterate group %d: %w", g, err)
	}
	finish()
	// Keys are in slot order and the system records' slot is the highest,
	// so out is sorted already; say so rather than trust it silently.
	if !slices.IsSortedFunc(out, func(a, b slotstore.SlotDigest) int { return int(a.Slot) - int(b.Slot) }) {
		return nil, fmt.Errorf("checks: group %d: slots out of order", g)
	}
	return out, nil
}

// waitPace takes n bytes from pace (nil: unpaced) or returns ctx's error.
func waitPace(ctx context.Context, pace *rate.Limiter, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if pace == nil {
		return nil
	}
	return pace.WaitN(ctx, min(n, pace.Burst()))
}
