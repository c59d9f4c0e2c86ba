package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
)

// TestWriteOrder drives one pipeline through arrivals and completions and
// checks when each write is proposed. A script's steps: "r" puts a read,
// "s" a sync, "w" a write (numbered from 1 in arrival order), "d" completes
// the oldest blocker; after each step, the writes proposed so far.
func TestWriteOrder(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []string // proposed after each step, "" for none
	}{
		{"writes alone go at once", "w w w", []string{"1", "1 2", "1 2 3"}},
		{"a write behind a read waits for it", "r w d", []string{"", "", "1"}},
		{"a write behind a completed read goes at once", "r d w", []string{"", "", "1"}},
		{"writes behind one read go together", "r w w d", []string{"", "", "", "1 2"}},
		{"a write waits for every read before it", "r r w d d", []string{"", "", "", "", "1"}},
		{"a read after a write does not hold it", "w r w d", []string{"1", "1", "1", "1 2"}},
		{"writes go in stages, each after its own reads", "r w r w d d", []string{"", "", "", "", "1", "1 2"}},
		{"a write behind a deferred one waits too", "r w d w", []string{"", "", "1", "1 2"}},
		{"a write behind a sync waits for it", "s w d", []string{"", "", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var proposed []string
			pl := newPipeline(make(chan *pending, 16), func(txn *txnlog.Txn) <-chan replication.Outcome {
				proposed = append(proposed, fmt.Sprint(txn.RequestID))
				return make(chan replication.Outcome, 1)
			})
			writes := 0
			for i, step := range strings.Fields(tt.script) {
				switch step {
				case "r":
					pl.put(&pending{kind: kindRead})
				case "s":
					pl.put(&pending{kind: kindSync})
				case "w":
					writes++
					pl.put(&pending{kind: kindWrite, txn: &txnlog.Txn{RequestID: uint64(writes)}})
				case "d":
					pl.blockerDone()
				}
				if got := strings.Join(proposed, " "); got != tt.want[i] {
					t.Fatalf("after step %d (%s): proposed %q, want %q", i+1, step, got, tt.want[i])
				}
			}
		})
	}
}

// TestProposedWritesAreExpectedAndAnswered: a write is registered with the
// outbox before it is proposed, and its item gets its outcome channel.
func TestProposedWritesAreExpectedAndAnswered(t *testing.T) {
	var expected []bool
	var pl *pipeline
	pl = newPipeline(make(chan *pending, 4), func(txn *txnlog.Txn) <-chan replication.Outcome {
		_, ok := pl.out.expecting[txn.RequestID]
		expected = append(expected, ok)
		return make(chan replication.Outcome, 1)
	})
	pl.put(&pending{kind: kindRead})
	w := &pending{kind: kindWrite, txn: &txnlog.Txn{RequestID: 9}}
	pl.put(w)
	if w.outcome != nil {
		t.Fatal("a write behind a queued read was proposed at once")
	}
	pl.blockerDone()
	if w.outcome == nil || w.txn != nil {
		t.Fatal("the deferred write was not proposed when the read completed")
	}
	if !slices.Equal(expected, []bool{true}) {
		t.Fatalf("registered with the outbox before Submit: %v, want [true]", expected)
	}
}
