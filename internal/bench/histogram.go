package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records non-negative int64 values (latencies in nanoseconds) in
// log-linear buckets, as HdrHistogram does: values below subBucketCount get
// one bucket each; above that every power-of-two range is split into
// subBucketHalf equal buckets, so any recorded value is known to within a
// relative error of 1/subBucketHalf (0.8%). Count, min, max and sum are
// exact. A Histogram is not safe for concurrent use: give each goroutine its
// own and Merge them.
type Histogram struct {
	counts []int64
	total  int64
	min    int64
	max    int64
	sum    float64
}

const (
	subBucketBits  = 8
	subBucketCount = 1 << subBucketBits // exact buckets for 0..255
	subBucketHalf  = subBucketCount / 2
	// bucketCount covers every non-negative int64: shifts 1..63-subBucketBits.
	bucketCount = subBucketCount + (63-subBucketBits)*subBucketHalf
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]int64, bucketCount), min: math.MaxInt64}
}

// bucketIndex maps a value to its bucket; negative values count as zero.
func bucketIndex(v int64) int {
	if v < subBucketCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBucketBits
	sub := int(uint64(v) >> uint(shift)) // in [subBucketHalf, subBucketCount)
	return subBucketCount + (shift-1)*subBucketHalf + (sub - subBucketHalf)
}

// bucketBounds returns the lowest and highest value that map to bucket i.
func bucketBounds(i int) (lo, hi int64) {
	if i < subBucketCount {
		return int64(i), int64(i)
	}
	j := i - subBucketCount
	shift := j/subBucketHalf + 1
	sub := uint64(j%subBucketHalf + subBucketHalf)
	lo = int64(sub << uint(shift))
	hi = int64((sub+1)<<uint(shift) - 1)
	return lo, hi
}

// Record adds one value.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketIndex(v)]++
	h.total++
	h.sum += float64(v)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// RecordDuration adds one duration in nanoseconds.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() int64 { return h.total }

// Min returns the smallest recorded value, or 0 when empty.
func (h *Histogram) Min() int64 {
	if h.total == 0 {
		return 0
	}
	return h.min
}

// Max returns the largest recorded value, or 0 when empty.
func (h *Histogram) Max() int64 { return h.max }

// Mean returns the exact mean, or 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}

// Quantile returns the value below or at which a fraction q (0..1] of the
// recorded values lie: the rank-ceil(q*n) value, reported as the highest
// value of its bucket but never beyond the recorded min and max. It returns
// 0 when empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.total)))
	rank = max(1, min(rank, h.total))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := bucketBounds(i)
			return max(h.min, min(hi, h.max))
		}
	}
	return h.max
}
