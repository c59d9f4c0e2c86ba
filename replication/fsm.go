package replication

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Observer is told about every applied transaction. Applied runs on the FSM
// goroutine with the tree's write lock held: it must be fast, must not block
// and must not call back into the tree.
type Observer interface {
	// BeforeApply is called on the FSM goroutine before each transaction
	// is applied, without the tree lock. It may block briefly to hold the
	// transaction back (a proposer's ordering constraint).
	BeforeApply(txn *txnlog.Txn)
	Applied(txn *txnlog.Txn, zxid int64, res *datatree.Result)
	// Restored is called after the state was replaced by a snapshot.
	Restored()
}

// Outcome is what a proposer learns about its transaction.
type Outcome struct {
	Zxid   int64
	Result *datatree.Result
	Err    error // not nil when the transaction's fate is unknown (not replicated)
}

// fsm implements raft.FSM over the tree and the session table.
//
// Apply, Snapshot and Restore run on raft's FSM goroutine, and applyAhead on
// a follower's forwarding goroutine, one at a time (mu); readers use the
// atomic pointers and counters.
type fsm struct {
	treeCfg       datatree.Config
	epochFromTerm bool

	tree     atomic.Pointer[datatree.Tree]
	sessions atomic.Pointer[session.Table]
	lastZxid atomic.Int64
	// sinceSnapshot counts transactions applied since the last snapshot
	// (snapCount is counted in transactions, as ZooKeeper does).
	sinceSnapshot atomic.Int64

	observer Observer
	waiters  *waiters
	applied  *appliedIndex
	local    *localEntries // entries this member built (local.go)
	// durable, when set, holds Apply back until the member's own log is
	// on disk past the entry (leadersync.go, rule 2).
	durable *leaderSync

	// mu serializes applies: raft's FSM goroutine (Apply, Snapshot,
	// Restore) and a follower's early applies (applyAhead). last is the
	// index of the last command entry applied by either, 0 when unknown
	// (after a restore from a snapshot that does not record it).
	mu   sync.Mutex
	last uint64
	// early counts the entries applyAhead applied.
	early atomic.Int64
}

var _ raft.FSM = (*fsm)(nil)

func newFSM(treeCfg datatree.Config, epochFromTerm bool, obs Observer, w *waiters, a *appliedIndex) *fsm {
	f := &fsm{treeCfg: treeCfg, epochFromTerm: epochFromTerm, observer: obs, waiters: w, applied: a,
		local: newLocalEntries()}
	f.tree.Store(datatree.New(treeCfg))
	f.sessions.Store(session.NewTable())
	return f
}

// nextZxid returns the zxid for the next transaction of an entry in term.
func (f *fsm) nextZxid(term uint64) int64 {
	last := f.lastZxid.Load()
	if !f.epochFromTerm {
		return last + 1
	}
	epoch := int64(term)
	if last>>32 < epoch {
		return epoch<<32 | 1
	}
	return last + 1
}

// Apply implements raft.FSM. An entry applied early (applyAhead) is not
// applied again. An entry this build cannot decode stops the member (panic)
// rather than letting it diverge from the others.
//
// With a deferred-sync log it first waits until the entry is on this
// member's disk; a failed fsync stops the member (panic), as ZooKeeper
// exits when it cannot write its log.
func (f *fsm) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Index <= f.last {
		return nil // applied early (applyAhead)
	}
	f.applyLocked(l)
	return nil
}

// applyAhead applies, ahead of raft's delivery, the entries up to index of
// this follower's log, which the leader reported committed: term is the
// term of the leader's entry at index. An entry of the same index and term
// in this log is the leader's, and so is every entry before it (raft's log
// matching), so all of them are committed. It gives up, leaving the
// entries to raft, when this log does not have them yet.
func (f *fsm) applyAhead(index, term uint64, logs raft.LogStore) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == 0 || index <= f.last {
		return
	}
	var l raft.Log
	if err := logs.GetLog(index, &l); err != nil || l.Term != term {
		return
	}
	for i := f.last + 1; i <= index; i++ {
		if err := logs.GetLog(i, &l); err != nil {
			return
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if !f.applyLocked(&l) {
			return
		}
		f.early.Add(1)
	}
}

// applyLocked applies one command entry, unless the member is closing (the
// entry then stays in the log, unapplied: false). f.mu is held.
func (f *fsm) applyLocked(l *raft.Log) bool {
	if f.durable != nil {
		if err := f.durable.waitSynced(l.Index); errors.Is(err, errSyncClosed) {
			return false
		} else if err != nil {
			panic(fmt.Sprintf("replication: log entry %d not on disk: %v", l.Index, err))
		}
	}
	en, err := f.decodeEntry(l.Data)
	if err != nil {
		panic(fmt.Sprintf("replication: undecodable log entry %d: %v", l.Index, err))
	}
	tree, sessions := f.tree.Load(), f.sessions.Load()
	f.sinceSnapshot.Add(int64(len(en.Txns)))
	for _, t := range en.Txns {
		if f.observer != nil {
			f.observer.BeforeApply(t)
		}
		if t.Tree.Type == txnlog.OpMoveSession {
			f.moveSession(sessions, t)
			continue
		}
		zxid := f.nextZxid(l.Term)
		switch t.Tree.Type {
		case jute.OpCreateSession:
			sessions.Add(t.Tree.SessionID, t.Timeout)
			sessions.SetOwner(t.Tree.SessionID, t.Owner)
		case jute.OpCloseSession:
			sessions.Remove(t.Tree.SessionID)
		}
		txn := t
		if code := sessionCheck(sessions, t); code != jute.OK {
			f.finishWithoutTree(txn, zxid, &datatree.Result{Err: code})
			continue
		}
		if body, ok := t.Tree.Request.(*txnlog.FailedWrite); ok && t.Tree.Type == txnlog.OpFailedWrite {
			f.finishWithoutTree(txn, zxid, &datatree.Result{Err: body.Err})
			continue
		}
		if t.Tree.Type == txnlog.OpSetConfig {
			f.finishWithoutTree(txn, zxid, f.setConfig(tree, t, zxid))
			continue
		}
		tree.Apply(&t.Tree, zxid, func(_ *datatree.Txn, res *datatree.Result) {
			f.lastZxid.Store(zxid)
			if f.observer != nil {
				f.observer.Applied(txn, zxid, res)
			}
			f.waiters.trigger(txn.RequestID, Outcome{Zxid: zxid, Result: res})
		})
	}
	f.last = l.Index
	f.applied.set(l.Index)
	return true
}

// moveSession makes t.Owner the owner of a session its client resumed on
// that member. It consumes no zxid: ZooKeeper revalidates a reconnecting
// session without writing to its log, so the zxids clients see do not move
// when a session changes members. The outcome carries the last zxid, and
// SessionExpired when the session is gone. It is still a log entry, so
// that every member decides SessionMoved alike.
func (f *fsm) moveSession(sessions *session.Table, t *txnlog.Txn) {
	res := &datatree.Result{}
	if t.Tree.SessionID == 0 || !sessions.SetOwner(t.Tree.SessionID, t.Owner) {
		res.Err = jute.SessionExpired
	}
	zxid := f.lastZxid.Load()
	if f.observer != nil {
		f.observer.Applied(t, zxid, res)
	}
	f.waiters.trigger(t.RequestID, Outcome{Zxid: zxid, Result: res})
}

// sessionCheck is ZooKeeper's checkSession for a transaction, decided at
// apply time so every member agrees:
//   - a request that raced with its session's close or expiry fails with
//     SessionExpired, so no ephemeral outlives its session;
//   - a write whose session now belongs to another member (the client
//     resumed it there) fails with SessionMoved, and the old member drops
//     that connection.
//
// Session transactions and the server's own (session 0: reaping) pass.
// A rejected transaction still consumes its zxid.
func sessionCheck(sessions *session.Table, t *txnlog.Txn) jute.Code {
	switch t.Tree.Type {
	case jute.OpCreateSession, jute.OpCloseSession:
		return jute.OK
	}
	if t.Tree.SessionID == 0 {
		return jute.OK
	}
	if _, ok := sessions.Get(t.Tree.SessionID); !ok {
		return jute.SessionExpired
	}
	if owner := sessions.Owner(t.Tree.SessionID); owner != 0 && t.Owner != 0 && owner != t.Owner {
		return jute.SessionMoved
	}
	return jute.OK
}

// setConfig replaces /zookeeper/config with the server lines of a reconfig
// and the version ZooKeeper gives a configuration: the zxid that made it.
func (f *fsm) setConfig(tree *datatree.Tree, t *txnlog.Txn, zxid int64) *datatree.Result {
	req, ok := t.Tree.Request.(*jute.SetDataRequest)
	if !ok {
		return &datatree.Result{Err: jute.MarshallingError}
	}
	text := append(append([]byte(nil), req.Data...), fmt.Sprintf("version=%x", zxid)...)
	tree.SetConfigNode(text, zxid, t.Tree.Time)
	data, st, _ := tree.GetData(configPath, nil, nil)
	return &datatree.Result{
		Response: &jute.GetDataResponse{Data: data, Stat: st},
		Events:   []datatree.Event{{Type: jute.EventNodeDataChanged, Path: configPath}},
	}
}

// configPath is the znode holding the dynamic configuration.
const configPath = "/zookeeper/config"

// finishWithoutTree completes a transaction the tree does not apply.
func (f *fsm) finishWithoutTree(txn *txnlog.Txn, zxid int64, res *datatree.Result) {
	f.lastZxid.Store(zxid)
	if f.observer != nil {
		f.observer.Applied(txn, zxid, res)
	}
	f.waiters.trigger(txn.RequestID, Outcome{Zxid: zxid, Result: res})
}

// waiters maps request ids to the channels of their proposers. Every member
// triggers on apply; only the proposer has registered a waiter.
type waiters struct {
	mu sync.Mutex
	m  map[uint64]chan Outcome
}

func newWaiters() *waiters { return &waiters{m: make(map[uint64]chan Outcome)} }

func (w *waiters) register(id uint64) chan Outcome {
	ch := make(chan Outcome, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

// trigger delivers o to the waiter of id, if any, exactly once.
func (w *waiters) trigger(id uint64, o Outcome) {
	if id == 0 {
		return
	}
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- o
	}
}

// appliedIndex tracks the last applied raft index and lets callers wait for
// it to reach a value.
type appliedIndex struct {
	mu      sync.Mutex
	index   uint64
	wake    chan struct{} // closed and replaced on an advance after a get
	watched bool          // wake was handed out by get since it was made
}

func newAppliedIndex() *appliedIndex { return &appliedIndex{wake: make(chan struct{})} }

func (a *appliedIndex) set(i uint64) {
	a.mu.Lock()
	if i > a.index {
		a.index = i
		if a.watched {
			close(a.wake)
			a.wake, a.watched = make(chan struct{}), false
		}
	}
	a.mu.Unlock()
}

// get returns the applied index and a channel closed on the next advance.
func (a *appliedIndex) get() (uint64, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.watched = true
	return a.index, a.wake
}
