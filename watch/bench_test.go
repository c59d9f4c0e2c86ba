package watch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// countConn is a Watcher that only counts notifications (single goroutine).
type countConn struct {
	id int64
	n  int
}

func (c *countConn) ID() int64                       { return c.id }
func (c *countConn) Notify(jute.WatcherEvent, int64) { c.n++ }

// newConns returns n counting watchers.
func newConns(n int) []*countConn {
	out := make([]*countConn, n)
	for i := range out {
		out[i] = &countConn{id: int64(i)}
	}
	return out
}

// totalNotified sums and resets the counters.
func totalNotified(conns []*countConn) int {
	n := 0
	for _, c := range conns {
		n += c.n
		c.n = 0
	}
	return n
}

// fillUnrelated gives each conn watches on its own paths until the registry
// holds total watches.
func fillUnrelated(r *Registry, conns []*countConn, total int) {
	for i := 0; r.Count() < total; i++ {
		c := conns[i%len(conns)]
		r.Add(c, fmt.Sprintf("/other/%d/%d", c.id, i), Data)
	}
}

// BenchmarkTriggerFanout measures one setData on a node every watcher
// watches, with 100,000 watches in the registry:
//   - persistent/oneshot: 1,000 watchers, each with a watch on the hot node
//     plus unrelated watches up to 100,000 in all (the unrelated ones must
//     cost nothing);
//   - persistent-100000watchers: 100,000 watchers all on the hot node;
//   - recursive-deep: 1,000 watchers, each with a recursive watch on every
//     one of the 100 ancestors of the changed node (100,000 matching entries,
//     de-duplicated to 1,000 notifications).
//
// ns/op is the cost of one Trigger; ns/notify divides it by the deliveries.
func BenchmarkTriggerFanout(b *testing.B) {
	const hot = "/hot"
	ev := []Event{changed(hot)}
	b.Run("persistent-1000watchers", func(b *testing.B) {
		r, conns := NewRegistry(), newConns(1000)
		for _, c := range conns {
			r.Add(c, hot, Persistent) // two entries: data and child
		}
		fillUnrelated(r, conns, 100_000)
		runFanout(b, r, conns, ev, nil, 1000)
	})
	b.Run("oneshot-1000watchers", func(b *testing.B) {
		r, conns := NewRegistry(), newConns(1000)
		fillUnrelated(r, conns, 100_000-len(conns))
		rearm := func() {
			for _, c := range conns {
				r.Add(c, hot, Data)
			}
		}
		rearm()
		runFanout(b, r, conns, ev, rearm, 1000)
	})
	b.Run("persistent-100000watchers", func(b *testing.B) {
		r, conns := NewRegistry(), newConns(100_000)
		for _, c := range conns {
			r.Add(c, hot, Persistent)
		}
		runFanout(b, r, conns, ev, nil, 100_000)
	})
	b.Run("recursive-deep-1000watchers", func(b *testing.B) {
		r, conns := NewRegistry(), newConns(1000)
		deep := strings.Repeat("/d", 100)
		for _, c := range conns {
			for i := 1; i <= 100; i++ {
				r.Add(c, deep[:2*i], PersistentRecursive) // "/d", "/d/d", ..., deep
			}
		}
		runFanout(b, r, conns, []Event{changed(deep + "/leaf")}, nil, 1000)
	})
}

// runFanout triggers evs b.N times, calling rearm (untimed) before each,
// and fails unless every trigger delivered perTrigger notifications.
func runFanout(b *testing.B, r *Registry, conns []*countConn, evs []Event, rearm func(), perTrigger int) {
	b.Helper()
	totalNotified(conns)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rearm != nil && i > 0 {
			b.StopTimer()
			rearm()
			b.StartTimer()
		}
		r.Trigger(evs, int64(i))
	}
	b.StopTimer()
	n := totalNotified(conns)
	if n != perTrigger*b.N {
		b.Fatalf("%d notifications for %d triggers, want %d each", n, b.N, perTrigger)
	}
	b.ReportMetric(float64(n)/float64(b.N), "notify/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/notify")
}

// BenchmarkTriggerUnrelated triggers a path nobody watches while the
// registry holds 100,000 watches (with and without a recursive one
// somewhere): it must not depend on the number of watches.
func BenchmarkTriggerUnrelated(b *testing.B) {
	for _, withRecursive := range []bool{false, true} {
		b.Run(fmt.Sprintf("recursive=%v", withRecursive), func(b *testing.B) {
			r, conns := NewRegistry(), newConns(1000)
			fillUnrelated(r, conns, 100_000)
			if withRecursive {
				r.Add(conns[0], "/elsewhere", PersistentRecursive)
			}
			ev := []Event{changed("/a/b/c/d"), kids("/a/b/c")}
			before := r.Count()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.Trigger(ev, int64(i))
			}
			b.StopTimer()
			if n := totalNotified(conns); n != 0 || r.Count() != before {
				b.Fatalf("unrelated triggers notified %d watchers and left %d of %d watches", n, r.Count(), before)
			}
		})
	}
}

// BenchmarkMemoryPerWatch registers 1,000,000 data watches on distinct
// paths (1,000 watchers x 1,000 paths, and one watcher x 1,000,000 paths)
// and reports the heap the registry holds per watch. The path strings are
// built beforehand and not counted (path-bytes/watch reports their size).
func BenchmarkMemoryPerWatch(b *testing.B) {
	const total = 1_000_000
	for _, nConns := range []int{1000, 1} {
		b.Run(fmt.Sprintf("watchers=%d", nConns), func(b *testing.B) {
			paths := make([]string, total)
			pathBytes := 0
			for i := range paths {
				paths[i] = fmt.Sprintf("/app/node-%07d", i)
				pathBytes += len(paths[i])
			}
			conns := newConns(nConns)
			b.ReportAllocs()
			var perWatch float64
			for i := 0; i < b.N; i++ {
				before := heapInUse()
				r := NewRegistry()
				for j, p := range paths {
					r.Add(conns[j%nConns], p, Data)
				}
				after := heapInUse()
				if r.Count() != total {
					b.Fatalf("Count = %d", r.Count())
				}
				perWatch = float64(after-before) / total
				runtime.KeepAlive(r)
			}
			b.ReportMetric(perWatch, "bytes/watch")
			b.ReportMetric(float64(pathBytes)/total, "path-bytes/watch")
		})
	}
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkAddTrigger measures arming one getData watch and firing it
// (a one-entry path created and dropped every time).
func BenchmarkAddTrigger(b *testing.B) {
	r, c := NewRegistry(), &countConn{}
	ev := []Event{changed("/x")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Add(c, "/x", Data)
		r.Trigger(ev, int64(i))
	}
	if c.n != b.N {
		b.Fatalf("%d notifications for %d iterations", c.n, b.N)
	}
}

// BenchmarkAdd measures registering a watch on a new path of a connection
// that already has many.
func BenchmarkAdd(b *testing.B) {
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("/add/%d", i)
	}
	r, c := NewRegistry(), &countConn{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Add(c, paths[i], Data)
	}
	b.StopTimer()
	if r.Count() != b.N {
		b.Fatalf("Count = %d after %d adds", r.Count(), b.N)
	}
}

// BenchmarkAddExisting measures re-registering a watch that is already set
// (the common "getData with watch" on a hot node).
func BenchmarkAddExisting(b *testing.B) {
	r, c := NewRegistry(), &countConn{}
	r.Add(c, "/x", Data)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Add(c, "/x", Data)
	}
	b.StopTimer()
	if r.Count() != 1 {
		b.Fatalf("Count = %d after re-adding one watch", r.Count())
	}
}
