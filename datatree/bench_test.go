package datatree

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

var benchData = bytes.Repeat([]byte("x"), 100)

func benchTree(b *testing.B) *Tree {
	b.Helper()
	tree := New(Config{})
	tree.Apply(&Txn{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/bench", ACL: open}}, 1, nil)
	return tree
}

func createTxns(n int) []*Txn {
	txns := make([]*Txn, n)
	for i := range txns {
		txns[i] = &Txn{Type: jute.OpCreate, SessionID: 1, Time: int64(i), Request: &jute.CreateRequest{
			Path: "/bench/n" + strconv.Itoa(i), Data: benchData, ACL: open}}
	}
	return txns
}

func BenchmarkApplyCreate(b *testing.B) {
	tree := benchTree(b)
	txns := createTxns(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i, txn := range txns {
		if res := tree.Apply(txn, int64(i+2), nil); res.Err != jute.OK {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkApplySetData(b *testing.B) {
	tree := benchTree(b)
	txn := &Txn{Type: jute.OpSetData, Request: &jute.SetDataRequest{Path: "/bench", Data: benchData, Version: -1}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := tree.Apply(txn, int64(i+2), nil); res.Err != jute.OK {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkApplyDelete(b *testing.B) {
	tree := benchTree(b)
	for i, txn := range createTxns(b.N) {
		tree.Apply(txn, int64(i+2), nil)
	}
	dels := make([]*Txn, b.N)
	for i := range dels {
		dels[i] = &Txn{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/bench/n" + strconv.Itoa(i), Version: -1}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i, txn := range dels {
		if res := tree.Apply(txn, int64(b.N+i+2), nil); res.Err != jute.OK {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkApplyMulti(b *testing.B) {
	tree := benchTree(b)
	txn := &Txn{Type: jute.OpMulti, Request: multi(mCreate("/bench/m", 0), mSet("/bench/m", "y", -1), mDelete("/bench/m", -1))}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := tree.Apply(txn, int64(i+2), nil); res.Err != jute.OK {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkGetData(b *testing.B) {
	tree := benchTree(b)
	for i, txn := range createTxns(1000) {
		tree.Apply(txn, int64(i+2), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, code := tree.GetData("/bench/n500", nil, nil); code != jute.OK {
				b.Fatal(code)
			}
		}
	})
}

// bigTree returns a tree of n znodes of 100 bytes laid out as zkbench's
// znodes workload makes them: 8 session directories under a run directory.
// Every node has its own copy of the data, as when it comes off the wire.
func bigTree(tb testing.TB, n int) *Tree {
	tb.Helper()
	tree := New(Config{})
	zxid := int64(0)
	create := func(path string, data []byte) {
		zxid++
		req := &jute.CreateRequest{Path: path, Data: data, ACL: open}
		if res := tree.Apply(&Txn{Type: jute.OpCreate, Time: zxid, Request: req}, zxid, nil); res.Err != jute.OK {
			tb.Fatal(path, res.Err)
		}
	}
	create("/zkbench", nil)
	create("/zkbench/r-1764000000000", nil)
	for s := 0; s < 8; s++ {
		create(fmt.Sprintf("/zkbench/r-1764000000000/s%04d", s), nil)
	}
	for i := 0; i < n; i++ {
		create(fmt.Sprintf("/zkbench/r-1764000000000/s%04d/n%d", i%8, i/8), bytes.Clone(benchData))
	}
	return tree
}

func BenchmarkWriteSnapshot(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			tree := bigTree(b, n)
			var size int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				snap, err := tree.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				size, err = snap.WriteTo(io.Discard)
				snap.Release()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size)/float64(n), "bytes/node")
		})
	}
}

// BenchmarkReadSnapshot restores a tree of 1M znodes of 100 bytes.
func BenchmarkReadSnapshot(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var buf bytes.Buffer
			if err := bigTree(b, n).WriteSnapshot(&buf); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tree, err := ReadSnapshot(bufio.NewReaderSize(bytes.NewReader(buf.Bytes()), 1<<20), Config{})
				if err != nil {
					b.Fatal(err)
				}
				if tree.NodeCount() != n+14 {
					b.Fatal(tree.NodeCount())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// BenchmarkSnapshotStall measures how long a snapshot holds up Apply: the
// worst latency of setData applied as fast as possible on another
// goroutine while a snapshot of 1M znodes is captured and written, and,
// for comparison, over as long a stretch without a snapshot.
func BenchmarkSnapshotStall(b *testing.B) {
	tree := bigTree(b, 1_000_000)
	zxid := int64(1 << 40)
	// applyWhile applies setData until work returns and reports the worst
	// latency and the number applied.
	applyWhile := func(work func()) (time.Duration, int) {
		stop := make(chan struct{})
		done := make(chan struct{})
		var worst time.Duration
		var applied int
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				zxid++
				start := time.Now()
				tree.Apply(&Txn{Type: jute.OpSetData, Time: zxid, Request: &jute.SetDataRequest{
					Path: "/zkbench/r-1764000000000/s0001/n" + strconv.Itoa(applied%100000), Data: benchData, Version: -1}}, zxid, nil)
				worst = max(worst, time.Since(start))
				applied++
			}
		}()
		work()
		close(stop)
		<-done
		return worst, applied
	}
	for i := 0; i < b.N; i++ {
		var capture, took time.Duration
		worst, applied := applyWhile(func() {
			start := time.Now()
			snap, err := tree.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			capture = time.Since(start)
			if _, err := snap.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
			snap.Release()
			took = time.Since(start)
		})
		idleWorst, _ := applyWhile(func() {
			deadline := time.Now().Add(took)
			for time.Now().Before(deadline) {
				runtime.Gosched()
			}
		})
		b.ReportMetric(float64(capture.Microseconds()), "capture-µs")
		b.ReportMetric(float64(took.Milliseconds()), "write-ms")
		b.ReportMetric(float64(worst.Microseconds()), "worst-apply-µs")
		b.ReportMetric(float64(idleWorst.Microseconds()), "worst-apply-no-snapshot-µs")
		b.ReportMetric(float64(applied), "applies")
	}
}

// BenchmarkMemoryPerNode reports the retained heap per znode for 100k
// nodes holding 100 bytes of data each (every node its own copy, as when
// the data comes off the wire).
func BenchmarkMemoryPerNode(b *testing.B) {
	const n = 100_000
	var perNode float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		txns := createTxns(n)
		for _, txn := range txns {
			req := txn.Request.(*jute.CreateRequest)
			req.Data = bytes.Clone(req.Data)
		}
		b.StartTimer()
		tree := benchTree(b)
		for j, txn := range txns {
			tree.Apply(txn, int64(j+2), nil)
		}
		b.StopTimer()
		txns = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		perNode = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
		runtime.KeepAlive(tree)
		b.StartTimer()
	}
	b.ReportMetric(perNode, "bytes/node")
}

// BenchmarkMemoryPerNodeRestored reports the retained heap per znode of
// 1M znodes of 100 bytes in zkbench's layout: built by creates, and read
// back from a snapshot (a restarted server).
func BenchmarkMemoryPerNodeRestored(b *testing.B) {
	const n = 1_000_000
	for i := 0; i < b.N; i++ {
		live := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		base := live()
		tree := bigTree(b, n)
		built := live() - base
		var buf bytes.Buffer
		if err := tree.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		tree = nil
		base = live()
		restored, err := ReadSnapshot(bufio.NewReaderSize(bytes.NewReader(buf.Bytes()), 1<<20), Config{})
		if err != nil {
			b.Fatal(err)
		}
		read := live() - base
		runtime.KeepAlive(restored)
		runtime.KeepAlive(&buf)
		b.ReportMetric(float64(built)/n, "built-bytes/node")
		b.ReportMetric(float64(read)/n, "restored-bytes/node")
	}
}

// BenchmarkGCWithTree reports how long a full garbage collection takes
// with a tree of 1M znodes of 100 bytes live: the collector's cost of
// keeping the tree in the heap, paid once per cycle.
func BenchmarkGCWithTree(b *testing.B) {
	tree := bigTree(b, 1_000_000)
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
	}
	runtime.KeepAlive(tree)
}

// benchHashNode returns a node as BenchmarkApplyCreate creates them, and
// its tree.
func benchHashNode(b *testing.B) (*Tree, *node) {
	tree := benchTree(b)
	tree.Apply(createTxns(1)[0], 2, nil)
	return tree, tree.lookup("/bench/n0")
}

// BenchmarkNodeHash is the hash of one node with 100 bytes of data: its
// path, own part and children part.
func BenchmarkNodeHash(b *testing.B) {
	tree, n := benchHashNode(b)
	var sink uint64
	b.ReportAllocs()
	for b.Loop() {
		sink += tree.nodeHash(pathHash("/bench/n0"), n)
	}
	runtime.KeepAlive(sink)
}

// BenchmarkDigestCreate is the digest's share of a create's Apply: the
// parent's children part out and in, and the new node's hash.
func BenchmarkDigestCreate(b *testing.B) {
	tree, n := benchHashNode(b)
	parent := tree.lookup("/bench")
	var sink uint64
	b.ReportAllocs()
	for b.Loop() {
		pp := parentHash("/bench")
		sink -= kidsHash(pp, parent, parent.kids.len())
		sink += kidsHash(pp, parent, parent.kids.len()) + tree.nodeHash(pathHash("/bench/n0"), n)
	}
	runtime.KeepAlive(sink)
}

// BenchmarkDigestSetData is the digest's share of a setData's Apply: the
// node's own part before and after, with 100 bytes of data.
func BenchmarkDigestSetData(b *testing.B) {
	tree, n := benchHashNode(b)
	var sink uint64
	b.ReportAllocs()
	for b.Loop() {
		p := pathHash("/bench/n0")
		sink -= tree.ownHash(p, n)
		sink += tree.ownHash(p, n)
	}
	runtime.KeepAlive(sink)
}

// BenchmarkComputeDigest recomputes the digest of a tree of 100k znodes
// of 100 bytes, as a startup check would.
func BenchmarkComputeDigest(b *testing.B) {
	const n = 100_000
	tree := bigTree(b, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tree.ComputeDigest()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
}

// BenchmarkGCPercentOnBigTree reports the collector's CPU per create of
// 100 bytes (data copied as it comes off the wire) on a tree of 1M
// znodes, at the runtime's default GC percent and at 25% (an operator's
// GOGC=25; docs/operations.md, "The collector's headroom"): the price of
// the smaller headroom, since every collection marks the tree.
func BenchmarkGCPercentOnBigTree(b *testing.B) {
	tree := bigTree(b, 1_000_000)
	samples := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	gcSeconds := func() float64 {
		metrics.Read(samples)
		return samples[0].Value.Float64()
	}
	zxid := int64(2_000_000)
	for _, pct := range []int{100, 25} {
		b.Run(fmt.Sprintf("gcpercent=%d", pct), func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(pct))
			req := &jute.CreateRequest{ACL: open}
			txn := &Txn{Type: jute.OpCreate, SessionID: 1, Request: req}
			prefix := fmt.Sprintf("/zkbench/r-1764000000000/s0000/g%d-", pct)
			runtime.GC()
			gc0 := gcSeconds()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				zxid++
				req.Path = prefix + strconv.FormatInt(zxid, 10)
				req.Data = bytes.Clone(benchData)
				if res := tree.Apply(txn, zxid, nil); res.Err != jute.OK {
					b.Fatal(res.Err)
				}
			}
			b.StopTimer()
			b.ReportMetric((gcSeconds()-gc0)*1e9/float64(b.N), "gc-cpu-ns/op")
		})
	}
	runtime.KeepAlive(tree)
}
