package ops

import (
	"math"
	"testing"
	"time"
)

func TestLatencyBucketsCoverEveryValue(t *testing.T) {
	values := []uint64{0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 1000, 1 << 20, 123456789, 1 << 62, math.MaxUint64}
	prev := -1
	for _, us := range values {
		i := bucketOf(us)
		if i < 0 || i >= latencySlots {
			t.Fatalf("bucketOf(%d) = %d, out of range", us, i)
		}
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d < %d: not monotonic", us, i, prev)
		}
		prev = i
		hi := bucketUpper(i)
		if us > hi {
			t.Fatalf("%d above the upper bound %d of its bucket %d", us, hi, i)
		}
		if i > 0 && us <= bucketUpper(i-1) {
			t.Fatalf("%d belongs to bucket %d, not %d", us, i-1, i)
		}
		if us >= subBuckets && float64(hi-us) > float64(us)/subBuckets {
			t.Fatalf("bucket of %d reaches %d: coarser than 1/%d", us, hi, subBuckets)
		}
	}
}

func TestLatencySummaryQuantilesAndWindows(t *testing.T) {
	s := newLatencySummary("x", "x", []float64{0.5, 0.9, 0.99}, time.Minute)
	for i := 1; i <= 1000; i++ {
		s.Observe(time.Duration(i) * time.Millisecond)
	}
	start := s.started
	q := s.snapshotQuantiles(start.Add(time.Second))
	for _, c := range []struct{ q, want float64 }{{0.5, 500}, {0.9, 900}, {0.99, 990}} {
		if got := q[c.q]; got < c.want || got > c.want*(1+1.0/subBuckets) {
			t.Errorf("quantile %v = %v ms, want %v within %v%%", c.q, got, c.want, 100/subBuckets)
		}
	}
	if s.count.Load() != 1000 || s.sumNs.Load() != uint64(500500*time.Millisecond) {
		t.Fatalf("count %d sum %d", s.count.Load(), s.sumNs.Load())
	}
	// One rotation keeps the observations (previous window), a second
	// drops them; the totals stay.
	if q := s.snapshotQuantiles(start.Add(31 * time.Second)); math.IsNaN(q[0.5]) {
		t.Fatal("observations lost after one rotation")
	}
	if q := s.snapshotQuantiles(start.Add(62 * time.Second)); !math.IsNaN(q[0.5]) {
		t.Fatalf("observations older than two windows still counted: %v", q)
	}
	if s.count.Load() != 1000 {
		t.Fatal("count reset by rotation")
	}
}

func BenchmarkLatencySummaryObserve(b *testing.B) {
	s := newLatencySummary("x", "x", []float64{0.5, 0.9, 0.99}, time.Minute)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(0)
		for pb.Next() {
			d += 7 * time.Microsecond
			s.Observe(d % (50 * time.Millisecond))
		}
	})
	if s.count.Load() == 0 {
		b.Fatal("nothing observed")
	}
}
