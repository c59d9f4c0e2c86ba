package replication

import (
	"context"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// The leader writes a write that will certainly fail into the log as a
// small OpFailedWrite transaction (its error and path) instead of the
// write with its payload, as ZooKeeper's leader logs an error transaction:
// a client that floods a missing znode with 1 MiB setData requests then
// costs the log a few dozen bytes a request instead of a megabyte.
//
// The leader orders every write, so it knows the outcome of a write in
// advance when no write it has put in the log ahead of it, and not yet
// applied, can change the answer: it tracks the paths that its unapplied
// entries touch, and forecasts (datatree.Tree.Forecast) only a write whose
// path and parent none of them touches. Writes whose paths it cannot list
// (multi) stop all forecasts while they are out, and so does a new term
// until this member has applied the entries of earlier terms. A
// closeSession (a session's end or expiry) can only delete znodes: while
// one is out, only NoNode forecasts (the node or its parent is missing)
// stand, as no deletion makes a missing node exist.

// forecastMinBytes is the smallest transaction worth forecasting: below
// it, logging the write costs the log about as much as its failure would.
const forecastMinBytes = 256

// forecaster is the leader's record of the paths its unapplied entries
// touch. The flusher (one at a time) screens batches and marks; the
// collector unmarks each entry once it is applied or has failed. mu guards
// every field.
type forecaster struct {
	mu    sync.Mutex
	term  uint64
	ready bool           // the entries of earlier terms are applied
	dirty map[string]int // unapplied transactions that may change each mark (markKey)
	blind int            // unapplied transactions whose paths are unknown
	// removing counts unapplied closeSessions: only NoNode forecasts hold.
	removing int
}

// forecastMarks is what one entry marked, for the collector to unmark.
type forecastMarks struct {
	keys     []string
	blind    int
	removing int
}

func newForecaster() *forecaster { return &forecaster{dirty: make(map[string]int)} }

// screen replaces the proposals of batch that will certainly fail with
// their OpFailedWrite transactions and marks what the others touch. It
// runs on the leader while it builds the entry for batch in term, with
// last the index of the last entry in its log; barrier waits for the
// entries up to last to be applied and then makes a new term's forecasts
// possible.
func (f *forecaster) screen(batch []proposal, tree *datatree.Tree, term, last uint64, barrier func(term, last uint64)) forecastMarks {
	f.mu.Lock()
	defer f.mu.Unlock()
	if term != f.term {
		f.term, f.ready, f.blind, f.removing = term, false, 0, 0
		clear(f.dirty)
		go barrier(term, last)
	}
	var marks forecastMarks
	for i := range batch {
		op, p, seq, known := proposalPath(&batch[i])
		if f.forecastable(op, p, batch[i].size, seq) && f.replaceIfFailing(&batch[i], tree, f.removing > 0) {
			continue
		}
		f.mark(&marks, op, p, seq, known)
	}
	return marks
}

// What an unapplied transaction may change, as a mark on a path: the
// node itself (existence, data, versions, ACL), the set of its children
// (and its cversion), or, for a sequential create under it, which child
// names exist.
const (
	markNode = "n"
	markKids = "k"
	markSeq  = "s"
)

func markKey(kind, p string) string { return kind + p }

// forecastable reports whether a write of op on p of size bytes may be
// forecast now: no unapplied transaction can change what its checks read.
func (f *forecaster) forecastable(op jute.OpCode, p string, size int, sequential bool) bool {
	if !f.ready || f.blind > 0 || size < forecastMinBytes || p == "" || strings.HasPrefix(p, "/zookeeper") {
		return false
	}
	parent := path.Dir(p)
	switch op {
	case jute.OpSetData:
		// The node, and whether a sequential create may make it.
		return f.dirty[markKey(markNode, p)] == 0 && f.dirty[markKey(markSeq, parent)] == 0
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		// The parent (existence, ACL, kind), and the child name: the
		// node itself, or for a sequential create every child and the
		// parent's cversion.
		if f.dirty[markKey(markNode, parent)] > 0 || f.dirty[markKey(markSeq, parent)] > 0 {
			return false
		}
		if sequential {
			return f.dirty[markKey(markKids, parent)] == 0
		}
		return f.dirty[markKey(markNode, p)] == 0
	}
	return false
}

// replaceIfFailing forecasts the proposal and, when it will fail, replaces
// it with its OpFailedWrite transaction. With onlyNoNode, other failures
// are not forecast (a pending deletion may change them).
func (f *forecaster) replaceIfFailing(p *proposal, tree *datatree.Tree, onlyNoNode bool) bool {
	t := p.txn
	if t == nil {
		var err error
		if t, err = txnlog.DecodeTxn(p.encoded, 0); err != nil {
			return false
		}
	}
	code := tree.Forecast(&t.Tree)
	if code == jute.OK || (onlyNoNode && code != jute.NoNode) {
		return false
	}
	failed := txnlog.Failed(t, code)
	if p.txn != nil {
		p.txn, p.size = failed, txnlog.SizeHint(failed)
	} else {
		p.encoded = txnlog.EncodeTxn(nil, failed)
		p.size = len(p.encoded)
	}
	return true
}

// mark records what a transaction that stays in the log may change (see
// markNode), or, for one whose paths are not known, that anything may.
func (f *forecaster) mark(marks *forecastMarks, op jute.OpCode, p string, sequential, known bool) {
	var keys []string
	parent := path.Dir(p)
	switch {
	case op == jute.OpCreateSession || op == txnlog.OpMoveSession || op == txnlog.OpFailedWrite || op == jute.OpCheck:
		return // no tree change
	case op == jute.OpCloseSession:
		f.removing++
		marks.removing++
		return
	case !known || p == "":
		f.blind++
		marks.blind++
		return
	case sequential:
		keys = []string{markKey(markSeq, parent), markKey(markKids, parent)}
	case op == jute.OpCreate || op == jute.OpCreate2 || op == jute.OpCreateContainer || op == jute.OpCreateTTL ||
		op == jute.OpDelete || op == jute.OpDeleteContainer:
		keys = []string{markKey(markNode, p), markKey(markKids, parent)}
	default: // setData, setACL, setConfig
		keys = []string{markKey(markNode, p)}
	}
	for _, k := range keys {
		f.dirty[k]++
	}
	marks.keys = append(marks.keys, keys...)
}

// unmark forgets an entry's marks once it is applied or failed. Marks of
// an earlier term were cleared when the term changed.
func (f *forecaster) unmark(term uint64, marks forecastMarks) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if term != f.term {
		return
	}
	f.blind -= marks.blind
	f.removing -= marks.removing
	for _, k := range marks.keys {
		if f.dirty[k]--; f.dirty[k] <= 0 {
			delete(f.dirty, k)
		}
	}
}

// setReady allows forecasts in term, once a barrier issued in it applied.
func (f *forecaster) setReady(term uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if term == f.term {
		f.ready = true
	}
}

// proposalPath returns a proposal's opcode, the path it names, whether it
// is a sequential create, and whether they could be read.
func proposalPath(p *proposal) (op jute.OpCode, path string, sequential, ok bool) {
	if p.txn != nil {
		return p.txn.Tree.Type, txnlog.RequestPath(p.txn.Tree.Request), txnlog.IsSequentialCreate(p.txn.Tree.Request), true
	}
	return txnlog.PeekPath(p.encoded)
}

// forecastBarrier allows forecasts in term once this member has applied
// every entry its log held when the term's first batch was built (index):
// the entries of earlier terms, whose paths the forecaster never saw. It
// gives up, leaving forecasts off for the term, when the node closes or
// that takes longer than a minute.
func (n *Node) forecastBarrier(term, index uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if n.WaitApplied(ctx, index) == nil {
		n.forecast.setReady(term)
	}
}
