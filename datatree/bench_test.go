package datatree

import (
	"bytes"
	"io"
	"runtime"
	"strconv"
	"testing"

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

func BenchmarkWriteSnapshot(b *testing.B) {
	tree := benchTree(b)
	for i, txn := range createTxns(10000) {
		tree.Apply(txn, int64(i+2), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tree.WriteSnapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
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
