package replication

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Observer is told about every applied transaction. Both calls run on the
// FSM goroutine. Applying comes first, before the transaction touches the
// tree or the session table, with no lock held: the proposer may read the
// state the transaction is about to change (a session's reads queued
// before its write, which must not see it). Applied comes after, with the
// tree's write lock held: it must be fast, must not block and must not
// call back into the tree. Neither may wait for a client.
type Observer interface {
	Applying(txn *txnlog.Txn)
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
// Apply, Snapshot and Restore run on raft's FSM goroutine, one at a time,
// and own last (Seed installs a state while that goroutine is idle);
// readers use the atomic pointers and counters.
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
	log      *slog.Logger
	// digests and ident are the node's (digest.go, identity.go);
	// onCheckpoint, if set, hears of every checkpoint recorded.
	digests      *digestLog
	ident        *identity
	onCheckpoint func(DigestRecord)
	// ensemble is the id the applied log or restored snapshot named (zero
	// until one did).
	ensemble txnlog.EnsembleID
	// last is the index of the last command entry applied, 0 when unknown
	// (after a restore from a snapshot that does not record it).
	// Snapshots record it (txnlog.SnapshotHeader.AppliedIndex).
	last uint64
}

var _ raft.FSM = (*fsm)(nil)

func newFSM(treeCfg datatree.Config, epochFromTerm bool, obs Observer, w *waiters, a *appliedIndex) *fsm {
	f := &fsm{treeCfg: treeCfg, epochFromTerm: epochFromTerm, observer: obs, waiters: w, applied: a,
		log: slog.New(slog.DiscardHandler), digests: &digestLog{}, ident: &identity{}}
	f.tree.Store(datatree.New(treeCfg))
	f.sessions.Store(session.NewTable())
	return f
}

// nextZxid returns the zxid for the next transaction of an entry in
// term; a standalone server's entry takes the next zxid of its epoch
// wherever it is applied (txnlog.FlagStandalone).
func (f *fsm) nextZxid(term uint64, flags byte) int64 {
	last := f.lastZxid.Load()
	if !f.epochFromTerm || flags&txnlog.FlagStandalone != 0 {
		return last + 1
	}
	epoch := int64(term)
	if last>>32 < epoch {
		return epoch<<32 | 1
	}
	return last + 1
}

// Apply implements raft.FSM: it decodes the entry and applies its
// transactions, or the control entry (digest.go). An entry this build
// cannot decode, or whose checksum fails, stops the member (panic) rather
// than letting it diverge from the others.
//
// An entry at or below last is not applied again. That happens only after
// restoring a snapshot written by an earlier build, whose followers applied
// forwarded writes ahead of raft and recorded how far: raft replays the
// log from its own snapshot index, which can be lower. A snapshot written
// now records the last entry raft delivered, which is at most raft's
// snapshot index (TestSnapshotRecordsAppliedIndex).
func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Index <= f.last {
		return nil
	}
	if txnlog.Kind(l.Data) != txnlog.EntryBatch {
		c, err := txnlog.DecodeControl(l.Data)
		if err != nil {
			panic(fmt.Sprintf("replication: undecodable log entry %d: %v", l.Index, err))
		}
		f.applyControl(l.Index, c)
		f.last = l.Index
		f.applied.set(l.Index, l.Term)
		return nil
	}
	en, err := txnlog.Decode(l.Data)
	if err != nil {
		panic(fmt.Sprintf("replication: undecodable log entry %d: %v", l.Index, err))
	}
	f.applyEntry(l, en)
	return nil
}

// applyEntry applies the transactions of the command entry l.
func (f *fsm) applyEntry(l *raft.Log, en *txnlog.Entry) {
	tree, sessions := f.tree.Load(), f.sessions.Load()
	f.sinceSnapshot.Add(int64(len(en.Txns)))
	for _, t := range en.Txns {
		if f.observer != nil {
			f.observer.Applying(t)
		}
		switch t.Tree.Type {
		case txnlog.OpMoveSession:
			f.moveSession(sessions, t)
			continue
		case txnlog.OpInitConfig:
			f.initConfig(tree, t)
			continue
		}
		zxid := f.nextZxid(l.Term, en.Flags)
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
	f.applied.set(l.Index, l.Term)
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

// initConfig seeds /zookeeper/config from the leader's configuration
// files while the node is still empty, as every member's copy of the log
// says, with zxid 0 and the entry's time: it consumes no zxid, as
// ZooKeeper's own startup write of the node does not. Once the node holds
// a configuration, a later seed changes nothing.
func (f *fsm) initConfig(tree *datatree.Tree, t *txnlog.Txn) {
	res := &datatree.Result{}
	req, ok := t.Tree.Request.(*jute.SetDataRequest)
	data, _, _ := tree.GetData(configPath, nil, nil)
	switch {
	case !ok:
		res.Err = jute.MarshallingError
	case len(data) == 0 && len(req.Data) > 0:
		tree.SetConfigNode(req.Data, 0, t.Tree.Time)
	default:
		res.Err = jute.NodeExists
	}
	zxid := f.lastZxid.Load()
	if f.observer != nil {
		f.observer.Applied(t, zxid, res)
	}
	f.waiters.trigger(t.RequestID, Outcome{Zxid: zxid, Result: res})
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
	term    uint64        // the term of the entry at index
	wake    chan struct{} // closed and replaced on an advance after a get
	watched bool          // wake was handed out by get since it was made
}

func newAppliedIndex() *appliedIndex { return &appliedIndex{wake: make(chan struct{})} }

func (a *appliedIndex) set(i, term uint64) {
	a.mu.Lock()
	if i > a.index {
		a.index, a.term = i, term
		if a.watched {
			close(a.wake)
			a.wake, a.watched = make(chan struct{}), false
		}
	}
	a.mu.Unlock()
}

// last returns the applied index and the term of its entry.
func (a *appliedIndex) last() (index, term uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index, a.term
}

// get returns the applied index and a channel closed on the next advance.
func (a *appliedIndex) get() (uint64, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.watched = true
	return a.index, a.wake
}
