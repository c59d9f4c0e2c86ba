package ops

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencySummary is a Prometheus summary of durations, exported in
// milliseconds, that costs a few atomic adds per observation.
// prometheus.Summary keeps exact-rank sketches that it merges and sorts as
// it goes, which showed up at 8% of the server's CPU under a write load;
// here an observation only counts into a log-linear bucket, and quantiles
// are computed from the buckets when the summary is scraped, to within
// 1/subBuckets (about 6%) of the value.
//
// The quantiles cover the current and the previous window; a scrape
// starts a new window when the current one is older than half of maxAge,
// so they describe the last maxAge/2 to maxAge, as a summary with MaxAge
// does. _count and _sum are totals since start. windows holds pointers to
// the two windows; mu serializes rotation and reading, not observing.
type latencySummary struct {
	desc      *prometheus.Desc
	quantiles []float64
	maxAge    time.Duration

	count atomic.Uint64
	sumNs atomic.Uint64

	current atomic.Pointer[latencyBuckets]
	mu      sync.Mutex
	prev    *latencyBuckets
	started time.Time // of the current window
}

// subBucketBits sets the resolution: 2^subBucketBits buckets per power of
// two of microseconds.
const subBucketBits = 4

const (
	subBuckets   = 1 << subBucketBits
	latencySlots = (64 - subBucketBits + 1) * subBuckets
)

type latencyBuckets [latencySlots]atomic.Uint64

func newLatencySummary(name, help string, quantiles []float64, maxAge time.Duration) *latencySummary {
	s := &latencySummary{
		desc:      prometheus.NewDesc(name, help, nil, nil),
		quantiles: quantiles,
		maxAge:    maxAge,
		prev:      new(latencyBuckets),
		started:   time.Now(),
	}
	s.current.Store(new(latencyBuckets))
	return s
}

// bucketOf maps microseconds to a bucket: exact below subBuckets, then
// subBuckets buckets for each power of two.
func bucketOf(us uint64) int {
	if us < subBuckets {
		return int(us)
	}
	exp := bits.Len64(us) - subBucketBits // >= 1
	return exp*subBuckets + int(us>>uint(exp-1)) - subBuckets
}

// bucketUpper is the largest microsecond value of bucket i.
func bucketUpper(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	exp := i / subBuckets
	mant := uint64(i%subBuckets + subBuckets)
	return (mant+1)<<uint(exp-1) - 1
}

// Observe records one duration.
func (s *latencySummary) Observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	s.current.Load()[bucketOf(uint64(d/time.Microsecond))].Add(1)
	s.count.Add(1)
	s.sumNs.Add(uint64(d))
}

// Describe implements prometheus.Collector.
func (s *latencySummary) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

// Collect implements prometheus.Collector.
func (s *latencySummary) Collect(ch chan<- prometheus.Metric) {
	q := s.snapshotQuantiles(time.Now())
	sum := float64(s.sumNs.Load()) / float64(time.Millisecond)
	ch <- prometheus.MustNewConstSummary(s.desc, s.count.Load(), sum, q)
}

// snapshotQuantiles rotates the windows when due and returns the
// quantiles, in milliseconds, of the two windows' observations (NaN when
// there are none, as prometheus.Summary reports).
func (s *latencySummary) snapshotQuantiles(now time.Time) map[float64]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.started) >= s.maxAge/2 {
		old := s.prev
		for i := range old {
			old[i].Store(0)
		}
		s.prev = s.current.Swap(old)
		s.started = now
	}
	cur := s.current.Load()
	var counts [latencySlots]uint64
	var total uint64
	for i := range counts {
		counts[i] = cur[i].Load() + s.prev[i].Load()
		total += counts[i]
	}
	out := make(map[float64]float64, len(s.quantiles))
	for _, q := range s.quantiles {
		out[q] = quantileOf(&counts, total, q)
	}
	return out
}

// quantileOf returns the q-quantile in milliseconds: the upper bound of the
// bucket holding the observation of that rank.
func quantileOf(counts *[latencySlots]uint64, total uint64, q float64) float64 {
	if total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return float64(bucketUpper(i)) / 1000
		}
	}
	return float64(bucketUpper(latencySlots-1)) / 1000
}
