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
// "R" more reads than an early write may run (earlyReadLimit+1), "s" a
// sync, "w" a write (numbered from 1 in arrival order), "d" completes the
// oldest blocker, "f" fills the outbox past earlyOutboxBytes (a client
// not reading); after each step, the writes proposed so far.
func TestWriteOrder(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []string // proposed after each step, "" for none
	}{
		{"writes alone go at once", "w w w", []string{"1", "1 2", "1 2 3"}},
		{"a write behind a few reads goes early", "r w d", []string{"", "1", "1"}},
		{"a write behind a completed read goes at once", "r d w", []string{"", "", "1"}},
		{"writes behind reads go early, in order", "r w r w", []string{"", "1", "1", "1 2"}},
		{"a write behind many reads waits for them", "R w", []string{"", ""}},
		{"a write behind a sync waits for it", "s w d", []string{"", "", "1"}},
		{"a read behind a sync does not release a write", "s r w d d", []string{"", "", "", "", "1"}},
		{"a write behind a deferred one waits too", "s w r w d d", []string{"", "", "", "", "1", "1 2"}},
		{"a client not reading gets no early write", "f r w d", []string{"", "", "", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var proposed []string
			pl := newPipeline(make(chan *pending, 64), func(txn *txnlog.Txn) <-chan replication.Outcome {
				proposed = append(proposed, fmt.Sprint(txn.RequestID))
				return make(chan replication.Outcome, 1)
			})
			writes := 0
			var blockers []itemKind
			put := func(p *pending) {
				pl.put(p)
				<-pl.queue // the completer's side of the queue is not under test
				if p.kind.blocks() {
					blockers = append(blockers, p.kind)
				}
			}
			for i, step := range strings.Fields(tt.script) {
				switch step {
				case "r":
					put(&pending{kind: kindRead})
				case "R":
					for range earlyReadLimit + 1 {
						put(&pending{kind: kindRead})
					}
				case "s":
					put(&pending{kind: kindSync})
				case "w":
					writes++
					put(&pending{kind: kindWrite, txn: &txnlog.Txn{RequestID: uint64(writes)}})
				case "d":
					pl.blockerDone(blockers[0])
					blockers = blockers[1:]
				case "f":
					pl.out.push(make([]byte, earlyOutboxBytes+1))
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
	pl.put(&pending{kind: kindSync})
	w := &pending{kind: kindWrite, txn: &txnlog.Txn{RequestID: 9}}
	pl.put(w)
	if w.outcome != nil {
		t.Fatal("a write behind a queued sync was proposed at once")
	}
	pl.blockerDone(kindSync)
	if w.outcome == nil || w.txn != nil {
		t.Fatal("the deferred write was not proposed when the read completed")
	}
	if !slices.Equal(expected, []bool{true}) {
		t.Fatalf("registered with the outbox before Submit: %v, want [true]", expected)
	}
}
