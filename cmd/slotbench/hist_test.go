package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsCoverValuesInOrder(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 1023, 1024, 1025, 2047, 2048, 4095, 4096, 1 << 20, 1<<20 + 12345, 1 << 40} {
		b := bucketOf(v)
		if b < prev {
			t.Fatalf("bucketOf(%d) = %d < bucket of a smaller value %d", v, b, prev)
		}
		prev = b
		if hi := bucketHigh(b); hi < v {
			t.Fatalf("bucketHigh(bucketOf(%d)) = %d < %d", v, hi, v)
		}
		if b > 0 && bucketHigh(b-1) >= v {
			t.Fatalf("value %d also fits the previous bucket (high %d)", v, bucketHigh(b-1))
		}
		if v >= subCount {
			if hi := bucketHigh(b); float64(hi-v) > float64(v)/halfSub {
				t.Fatalf("bucket of %d is too wide: high %d", v, hi)
			}
		}
	}
}

// The histogram's percentiles agree with the exact ones of a sorted sample
// within the bucket precision (0.2%), and merging equals recording together.
func TestQuantilesMatchSortedSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := newHist(), newHist()
	var all []uint64
	for i := range 200000 {
		// A long-tailed mix: mostly ~2 ms, some 50–500 ms.
		us := uint64(1500 + r.ExpFloat64()*800)
		if r.IntN(100) == 0 {
			us = uint64(50000 + r.IntN(450000))
		}
		all = append(all, us)
		if i%2 == 0 {
			a.record(time.Duration(us) * time.Microsecond)
		} else {
			b.record(time.Duration(us) * time.Microsecond)
		}
	}
	a.merge(b)
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := all[int(math.Ceil(q*float64(len(all))))-1]
		got := a.quantile(q)
		if got < want || float64(got-want) > float64(want)*0.002+1 {
			t.Errorf("q%.3f = %d µs, sorted sample says %d", q, got, want)
		}
	}
	if a.n != uint64(len(all)) || a.min != all[0] || a.max != all[len(all)-1] {
		t.Fatalf("n/min/max = %d/%d/%d, want %d/%d/%d", a.n, a.min, a.max, len(all), all[0], all[len(all)-1])
	}
	if s := a.summary(); s.P50 <= 0 || s.P99 < s.P50 || s.P999 < s.P99 || s.Max < s.P999 {
		t.Fatalf("summary out of order: %+v", s)
	}
}

func TestEmptyHistogram(t *testing.T) {
	h := newHist()
	if h.quantile(0.99) != 0 || h.summary() != (latency{}) {
		t.Fatal("an empty histogram reports values")
	}
	h.record(7 * time.Millisecond)
	if got := h.quantile(0.5); got != 7000 {
		t.Fatalf("one sample of 7 ms: p50 = %d µs", got)
	}
}
