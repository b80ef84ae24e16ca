package main

import (
	"math"
	"math/bits"
	"time"
)

// hist is a log-bucketed latency histogram in the spirit of HdrHistogram:
// values are microseconds; every value below 2^subBits is its own bucket, and
// above that each power of two is split into 2^(subBits-1) equal buckets, so a
// reported percentile is within 1/2^(subBits-1) (0.2%) of the true sample.
// One histogram belongs to one goroutine; merge them at the end.
type hist struct {
	counts   []uint64
	n        uint64
	sum      uint64 // µs
	min, max uint64 // µs, exact
}

const (
	subBits  = 10
	subCount = 1 << subBits // 1024 exact buckets
	halfSub  = subCount / 2
	maxShift = 40 // values up to 2^50 µs (35 years) are kept; larger ones are clamped
)

func newHist() *hist {
	return &hist{counts: make([]uint64, subCount+maxShift*halfSub), min: math.MaxUint64}
}

// bucketOf returns the bucket index of v (µs).
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits // ≥ 1
	if shift > maxShift {
		return subCount + maxShift*halfSub - 1
	}
	return subCount + (shift-1)*halfSub + int(v>>uint(shift)) - halfSub
}

// bucketHigh is the largest value that falls into bucket i.
func bucketHigh(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	shift := uint((i-subCount)/halfSub + 1)
	top := uint64((i-subCount)%halfSub + halfSub)
	return (top+1)<<shift - 1
}

func (h *hist) record(d time.Duration) {
	v := uint64(max(d.Microseconds(), 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// quantile returns the value at quantile q (0..1) in µs: the highest value
// of the bucket that holds the ceil(q·n)-th sample, capped at the exact max.
func (h *hist) quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return max(min(bucketHigh(i), h.max), h.min)
		}
	}
	return h.max
}

func (h *hist) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.n)
}

// latency is what a result reports of one histogram, in milliseconds.
type latency struct {
	N    uint64  `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Min  float64 `json:"min_ms"`
	Max  float64 `json:"max_ms"`
}

func (h *hist) summary() latency {
	ms := func(us uint64) float64 { return float64(us) / 1000 }
	if h.n == 0 {
		return latency{}
	}
	return latency{
		N: h.n, Mean: h.mean() / 1000,
		P50: ms(h.quantile(0.50)), P90: ms(h.quantile(0.90)), P99: ms(h.quantile(0.99)),
		P999: ms(h.quantile(0.999)), Min: ms(h.min), Max: ms(h.max),
	}
}
