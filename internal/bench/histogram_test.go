package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// oracleQuantile is the rank-ceil(q*n) element of sorted values.
func oracleQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

func TestHistogramQuantilesMatchSortedOracle(t *testing.T) {
	gens := []struct {
		name string
		n    int
		gen  func(r *rand.Rand) int64
	}{
		{"small exact values", 5000, func(r *rand.Rand) int64 { return r.Int64N(256) }},
		{"uniform microseconds", 20000, func(r *rand.Rand) int64 { return 1000 + r.Int64N(5_000_000) }},
		{"exponential latencies", 50000, func(r *rand.Rand) int64 { return int64(r.ExpFloat64() * 2e6) }},
		{"log-uniform over 9 decades", 30000, func(r *rand.Rand) int64 { return int64(math.Pow(10, r.Float64()*9)) }},
		{"heavy tail", 10000, func(r *rand.Rand) int64 {
			if r.IntN(100) == 0 {
				return 1e9 + r.Int64N(1e9)
			}
			return 50_000 + r.Int64N(1000)
		}},
		{"single value", 1, func(*rand.Rand) int64 { return 123456789 }},
		{"constant", 1000, func(*rand.Rand) int64 { return 777_777 }},
	}
	quantiles := []float64{0, 0.0001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for gi, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(42, uint64(gi)))
			h := NewHistogram()
			values := make([]int64, g.n)
			for i := range values {
				values[i] = g.gen(r)
				h.Record(values[i])
			}
			slices.Sort(values)
			for _, q := range quantiles {
				want := oracleQuantile(values, q)
				got := h.Quantile(q)
				if got < want {
					t.Errorf("q=%v: got %d below the oracle %d; quantiles report their bucket's upper bound", q, got, want)
				}
				if bucketIndex(got) != bucketIndex(want) {
					t.Errorf("q=%v: got %d, oracle %d (different buckets)", q, got, want)
				}
				if rel := math.Abs(float64(got-want)) / math.Max(1, float64(want)); rel > 1.0/subBucketHalf {
					t.Errorf("q=%v: got %d, oracle %d: relative error %.4f", q, got, want, rel)
				}
			}
			if h.Count() != int64(g.n) || h.Min() != values[0] || h.Max() != values[len(values)-1] {
				t.Errorf("count/min/max = %d/%d/%d, want %d/%d/%d", h.Count(), h.Min(), h.Max(), g.n, values[0], values[len(values)-1])
			}
			var sum float64
			for _, v := range values {
				sum += float64(v)
			}
			if mean := sum / float64(g.n); math.Abs(h.Mean()-mean) > 1e-6*mean {
				t.Errorf("mean = %v, want %v", h.Mean(), mean)
			}
		})
	}
}

func TestHistogramBucketsTileTheRange(t *testing.T) {
	prevHi := int64(-1)
	for i := range bucketCount {
		lo, hi := bucketBounds(i)
		if lo != prevHi+1 || hi < lo {
			t.Fatalf("bucket %d = [%d, %d], previous ended at %d", i, lo, hi, prevHi)
		}
		if bucketIndex(lo) != i || bucketIndex(hi) != i {
			t.Fatalf("bucket %d = [%d, %d] but its bounds map to %d and %d", i, lo, hi, bucketIndex(lo), bucketIndex(hi))
		}
		if lo >= subBucketCount && float64(hi-lo+1)/float64(lo) > 1.0/subBucketHalf {
			t.Fatalf("bucket %d = [%d, %d] is wider than the promised precision", i, lo, hi)
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Fatalf("last bucket ends at %d, want MaxInt64", prevHi)
	}
}

func TestHistogramMergeEqualsRecordingEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 10000 {
		v := int64(r.ExpFloat64() * 1e5)
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	a.Merge(NewHistogram()) // merging an empty histogram changes nothing
	if !slices.Equal(a.counts, all.counts) || a.Count() != all.Count() || a.Min() != all.Min() || a.Max() != all.Max() {
		t.Fatalf("merged histogram differs from one that recorded everything")
	}
	if math.Abs(a.Mean()-all.Mean()) > 1e-6*all.Mean() {
		t.Fatalf("merged mean %v, want %v", a.Mean(), all.Mean())
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.5) != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatalf("empty histogram reports non-zero figures")
	}
	if s := h.Summarize(); s != (LatencySummary{}) {
		t.Fatalf("empty summary = %+v", s)
	}
	h.Record(-5)
	if h.Quantile(1) != 0 || h.Min() != 0 || h.Count() != 1 {
		t.Fatalf("a negative value should count as 0: q1=%d min=%d", h.Quantile(1), h.Min())
	}
}

func TestHistogramSummarizeInMicroseconds(t *testing.T) {
	h := NewHistogram()
	for v := int64(1); v <= 100; v++ {
		h.Record(v * 1000) // 1..100 us
	}
	s := h.Summarize()
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want/subBucketHalf {
			t.Errorf("%s = %v us, want %v", name, got, want)
		}
	}
	check("p50", s.P50, 50)
	check("p90", s.P90, 90)
	check("p99", s.P99, 99)
	check("max", s.Max, 100)
	check("mean", s.Mean, 50.5)
	if s.Count != 100 {
		t.Errorf("count = %d", s.Count)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 1024)
	for i := range vals {
		vals[i] = int64(r.ExpFloat64() * 1e6)
	}
	b.ReportAllocs()
	n := 0
	for ; b.Loop(); n++ {
		h.Record(vals[n&1023])
	}
	if h.Count() != int64(n) {
		b.Fatalf("Count = %d after %d records", h.Count(), n)
	}
}
