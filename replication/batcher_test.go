package replication

import (
	"bytes"
	"slices"
	"sync"
	"testing"

	"github.com/zkserverd/zkserverd/txnlog"
)

// recordingQueue is a proposal queue whose flushes are recorded, as
// batches of proposal ids, instead of reaching raft.
type recordingQueue struct {
	proposalQueue
	batches [][]uint64
}

func newRecordingQueue() *recordingQueue {
	q := &recordingQueue{}
	q.space = sync.NewCond(&q.mu)
	q.flush = func(batch []proposal) {
		ids := make([]uint64, len(batch))
		for i, p := range batch {
			ids[i] = p.id
		}
		q.batches = append(q.batches, ids)
	}
	return q
}

func proposals(ids ...uint64) []proposal {
	ps := make([]proposal, len(ids))
	for i, id := range ids {
		ps[i] = proposal{id: id, size: 10}
	}
	return ps
}

// TestQueueBoundsEntriesOut: proposals are flushed at once while fewer than
// maxUnappliedEntries entries are out; beyond that they wait, and the
// completion of an entry flushes everything that waited as one entry, in
// the order it was queued.
func TestQueueBoundsEntriesOut(t *testing.T) {
	q := newRecordingQueue()
	next := uint64(1)
	for range maxUnappliedEntries {
		if !q.add(proposals(next)) {
			t.Fatal("queue refused a proposal")
		}
		next++
	}
	if len(q.batches) != maxUnappliedEntries {
		t.Fatalf("%d entries flushed below the bound, want %d", len(q.batches), maxUnappliedEntries)
	}
	waiting := []uint64{next, next + 1, next + 2}
	for _, id := range waiting {
		q.add(proposals(id))
	}
	if len(q.batches) != maxUnappliedEntries {
		t.Fatalf("%d entries flushed with %d out, want none more", len(q.batches)-maxUnappliedEntries, maxUnappliedEntries)
	}
	if idle := q.done(); idle {
		t.Fatal("done reported idle with entries out")
	}
	if got := q.batches[len(q.batches)-1]; !slices.Equal(got, waiting) {
		t.Fatalf("entry flushed on completion carries %v, want %v", got, waiting)
	}
	for range maxUnappliedEntries - 1 {
		q.done()
	}
	if idle := q.done(); !idle {
		t.Fatal("done did not report idle once every entry was seen through")
	}
}

// TestQueueCloseReturnsWaiting: closing hands back the proposals still
// waiting and refuses later ones.
func TestQueueCloseReturnsWaiting(t *testing.T) {
	q := newRecordingQueue()
	for id := range uint64(maxUnappliedEntries + 2) {
		q.add(proposals(id))
	}
	left := q.close()
	if len(left) != 2 || left[0].id != maxUnappliedEntries || left[1].id != maxUnappliedEntries+1 {
		t.Fatalf("close returned %v, want the last two proposals", left)
	}
	if q.add(proposals(99)) {
		t.Fatal("a closed queue accepted a proposal")
	}
	q.done()
	if n := len(q.batches); n != maxUnappliedEntries {
		t.Fatalf("%d entries flushed after close, want %d", n, maxUnappliedEntries)
	}
}

// TestForwardedBatchRoundTrip: a batch framed for the leader decodes into
// each transaction's own encoding, local and forwarded alike, whether the
// size estimates are exact, short or long.
func TestForwardedBatchRoundTrip(t *testing.T) {
	local := createTxn("/local")
	forwarded := txnlog.EncodeTxn(nil, createTxn("/forwarded/elsewhere"))
	tests := []struct {
		name  string
		slack int // added to each local proposal's size estimate
	}{{"exact", 0}, {"short", -20}, {"long", 300}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			batch := []proposal{
				{txn: local, size: txnlog.SizeHint(local) + tc.slack},
				{encoded: forwarded, size: len(forwarded)},
				{txn: createTxn("/"), size: txnlog.SizeHint(createTxn("/")) + tc.slack},
			}
			got, err := decodeBatch(encodeBatch(batch))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(batch) {
				t.Fatalf("decoded %d transactions, want %d", len(got), len(batch))
			}
			for i := range batch {
				if want := batch[i].appendTo(nil); !bytes.Equal(got[i], want) {
					t.Fatalf("transaction %d decoded as %x, want %x", i, got[i], want)
				}
			}
		})
	}
}

// FuzzDecodeBatch: a forwarded batch from the wire either decodes into
// non-empty transactions that frame back to the same bytes, or is refused
// with an error (a null or empty transaction among them); it never panics.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch([]proposal{{txn: createTxn("/a"), size: 8}, {encoded: []byte{1, 2, 3}, size: 3}}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		txns, err := decodeBatch(b)
		if err != nil {
			return
		}
		batch := make([]proposal, len(txns))
		for i, txn := range txns {
			if len(txn) == 0 {
				t.Fatalf("transaction %d of a decoded batch is empty", i)
			}
			batch[i] = proposal{encoded: txn, size: len(txn)}
		}
		if again := encodeBatch(batch); !bytes.Equal(again, b) {
			t.Fatalf("decoded %d transactions that frame as %x, not %x", len(txns), again, b)
		}
	})
}
