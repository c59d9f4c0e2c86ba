package mirror

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Serving clients from a mirror.
//
// A Replica lets a zkserverd server (package server, through its Replica
// interface) serve ZooKeeper clients from a State while it mirrors, as a
// ZooKeeper observer serves them: reads are answered from the State;
// writes, createSession and closeSession go to the ZooKeeper leader as
// REQUEST packets and a reconnecting session is revalidated there
// (Upstream, a *zab.Observer). A write's outcome is the transaction that
// comes back for its (session, cxid): the Replica hands it to the server's
// apply hook with the very txnlog.Txn the server submitted, and sends the
// outcome on the channel Submit returned. Transactions of other members'
// clients reach the hook as txns the server does not own, so that its
// watches fire.
//
// The Replica never expires or closes a session itself: only ZooKeeper's
// leader does, and its closeSession comes back as a transaction.

// Upstream is the ZooKeeper leader as a Replica reaches it; *zab.Observer
// implements it (zab/client.go).
type Upstream interface {
	Request(sessionID int64, cxid int32, op int32, body []byte, auth []jute.ID) error
	Revalidate(ctx context.Context, sessionID int64, timeoutMs int32) (bool, error)
	Sync(ctx context.Context, sessionID int64, cxid int32, path string, auth []jute.ID) error
	Touch(sessions map[int64]int32)
	Leader() (int64, bool)
	WaitUpToDate(ctx context.Context) error
	Err() error
}

// ReplicaOptions configures a Replica.
type ReplicaOptions struct {
	// ServerID is the server's id: request ids carry it, and the
	// transactions it submits are owned by it.
	ServerID int64
	// Observer is the server's apply hook (server.ReplicaSetup).
	Observer replication.Observer
	// Tree configures the State's tree (its Authorizer checks reads).
	Tree datatree.Config
	// Logger receives the State's and the Replica's logs (nil: none).
	Logger *slog.Logger
	// RevalidateTimeout bounds a session's revalidation (default 10s).
	RevalidateTimeout time.Duration
}

// Errors of a Replica's outcomes.
var (
	// ErrLinkLost: the connection to the ZooKeeper leader ended before
	// the request's transaction came back; its fate is unknown.
	ErrLinkLost = errors.New("mirror: connection to the ZooKeeper leader lost")
	// ErrNotSupported: the request has no equivalent on a ZooKeeper
	// observer (membership changes, leadership transfer).
	ErrNotSupported = errors.New("mirror: not supported while mirroring a ZooKeeper ensemble")
	// ErrReplicaClosed: Close was called.
	ErrReplicaClosed = errors.New("mirror: replica closed")
)

// Replica serves a State to a server. See "Serving clients from a mirror"
// above.
//
// The protocol's goroutine (the zab observer's) calls the Handler methods
// and, through the State, applying and applied; only it calls the
// server's hook, and it owns cur and snapped. sendMu serializes Submit's
// decision and send (so that a session's requests leave in cxid order,
// and none overtakes those held by Freeze). mu guards the fields after
// it.
type Replica struct {
	st     *State
	server replication.Observer
	myID   int64
	log    *slog.Logger
	revTO  time.Duration
	reqSeq atomic.Uint64
	// stopped is set by Close: the server's hook is called no more.
	stopped atomic.Bool
	lost    chan struct{} // signalled (cap 1) when the leader link ends or a resync happened
	stop    chan struct{}
	done    chan struct{}

	// owned by the protocol's goroutine
	cur     *waiter // the waiter Applying matched, for Applied
	snapped bool    // a Snapshot since the last UpToDate

	sendMu sync.Mutex

	mu        sync.Mutex
	up        Upstream
	waiters   map[waitKey]*waiter
	cxid      int32
	busy      int   // submits sent or being sent, outcome not delivered
	gen       int64 // syncs completed (UpToDate)
	servedGen int64 // gen at the last WaitReady that succeeded
	frozen    bool
	held      []*waiter // submits held by Freeze, in order
	closed    bool
}

// waitKey is how a transaction names its request: session and cxid.
type waitKey struct {
	session int64
	cxid    int32
}

// waiter is a submitted transaction waiting for its outcome.
type waiter struct {
	txn *txnlog.Txn
	ch  chan replication.Outcome
	key waitKey
	gen int64 // the sync it was sent in
}

// NewReplica returns a Replica over a new State. Once the server that
// uses it is built, hand it to zab.Start as the Handler (the observer
// calls the server's hook from then on), then call Follow with the
// observer.
func NewReplica(opts ReplicaOptions) *Replica {
	r := &Replica{
		server: opts.Observer, myID: opts.ServerID, log: opts.Logger, revTO: opts.RevalidateTimeout,
		lost: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		waiters: make(map[waitKey]*waiter),
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.revTO <= 0 {
		r.revTO = 10 * time.Second
	}
	r.st = New(Options{Tree: opts.Tree, Logger: r.log, Applying: r.applying, Applied: r.applied})
	return r
}

// State returns the mirrored state.
func (r *Replica) State() *State { return r.st }

// Follow sets the leader connection requests go through and starts
// watching it. Call it once, before the server serves.
func (r *Replica) Follow(up Upstream) {
	r.mu.Lock()
	r.up = up
	r.mu.Unlock()
	_, synced := up.Leader()
	go r.watchLink(up, synced)
}

// upstream returns the leader connection (nil before Follow).
func (r *Replica) upstream() Upstream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up
}

// watchLink notices, every 20 ms, that the leader link ended: it fails
// the requests waiting on it and tells the server (LeaderLinkLost).
func (r *Replica) watchLink(up Upstream, had bool) {
	defer close(r.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		_, ok := up.Leader()
		if had && !ok {
			r.log.Warn("mirror: lost the ZooKeeper leader; clients are disconnected until it is back")
			r.failWaiters(func(*waiter) bool { return true }, ErrLinkLost)
			r.signalLost()
		}
		had = ok
	}
}

// signalLost wakes the server's serving supervisor.
func (r *Replica) signalLost() {
	select {
	case r.lost <- struct{}{}:
	default:
	}
}

// failWaiters ends the waiters that match with err.
func (r *Replica) failWaiters(match func(*waiter) bool, err error) {
	r.mu.Lock()
	var failed []*waiter
	for k, w := range r.waiters {
		if match(w) {
			delete(r.waiters, k)
			failed = append(failed, w)
		}
	}
	r.busy -= len(failed)
	r.mu.Unlock()
	for _, w := range failed {
		w.ch <- replication.Outcome{Err: err}
	}
}

// The zab.Handler methods: the State's, and what the server must learn.

// LastZxid implements zab.Handler.
func (r *Replica) LastZxid() int64 { return r.st.LastZxid() }

// Snapshot implements zab.Handler; the server hears of it at UpToDate.
func (r *Replica) Snapshot(zxid int64, br *bufio.Reader) error {
	r.snapped = true
	return r.st.Snapshot(zxid, br)
}

// Truncate implements zab.Handler.
func (r *Replica) Truncate(zxid int64) error { return r.st.Truncate(zxid) }

// Txn implements zab.Handler.
func (r *Replica) Txn(zxid int64, data []byte) error { return r.st.Txn(zxid, data) }

// UpToDate implements zab.Handler. A sync that follows another one is a
// resync: the requests sent before it that did not come back are lost,
// the server drops its clients (QuorumHealth fails once), and after a
// snapshot it learns that the state was replaced (Restored).
func (r *Replica) UpToDate() {
	r.st.UpToDate()
	r.mu.Lock()
	r.gen++
	gen := r.gen
	r.mu.Unlock()
	r.failWaiters(func(w *waiter) bool { return w.gen < gen }, ErrLinkLost)
	if r.snapped && !r.stopped.Load() {
		r.server.Restored()
	}
	r.snapped = false
	r.signalLost()
}

// applying matches a transaction about to be applied with its waiter and
// calls the server's Applying (State's Options.Applying).
func (r *Replica) applying(a Applied) {
	r.cur = r.lookup(waitKey{a.SessionID, a.Cxid}, a.Type)
	if !r.stopped.Load() {
		r.server.Applying(r.txnOf(r.cur, a))
	}
}

// applied hands an applied transaction to the server's hook and its
// outcome to the waiter (State's Options.Applied).
func (r *Replica) applied(a Applied) {
	w := r.cur
	r.cur = nil
	if w == nil || w.key != (waitKey{a.SessionID, a.Cxid}) {
		w = r.lookup(waitKey{a.SessionID, a.Cxid}, a.Type)
	}
	if w != nil && !r.remove(w) {
		w = nil // failed meanwhile (link lost): the transaction is not its outcome any more
	}
	if !r.stopped.Load() {
		r.server.Applied(r.txnOf(w, a), a.Zxid, a.Result)
	}
	if w != nil {
		w.ch <- replication.Outcome{Zxid: a.Zxid, Result: a.Result}
	}
}

// lookup returns the waiter of key (nil: none). A createSession is
// matched by session alone: its cxid is 0.
func (r *Replica) lookup(key waitKey, typ jute.OpCode) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.waiters[key]; ok && (typ != jute.OpCreateSession || w.txn.Tree.Type == jute.OpCreateSession) {
		return w
	}
	return nil
}

// remove takes w out of the waiters; false when it was not there.
func (r *Replica) remove(w *waiter) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiters[w.key] != w {
		return false
	}
	delete(r.waiters, w.key)
	r.busy--
	return true
}

// txnOf is the transaction the server's hook sees: the one its
// connection submitted, or one of another member's (Owner 0).
func (r *Replica) txnOf(w *waiter, a Applied) *txnlog.Txn {
	if w != nil {
		return w.txn
	}
	return &txnlog.Txn{Timeout: a.Timeout, Tree: datatree.Txn{Type: a.Type, SessionID: a.SessionID, Time: a.Time}}
}

// Reads and the ensemble view (server.Replica).

// Tree implements server.Replica.
func (r *Replica) Tree() *datatree.Tree { return r.st.Tree() }

// Sessions implements server.Replica.
func (r *Replica) Sessions() *session.Table { return r.st.Sessions() }

// Clustered implements server.Replica: a mirror is an ensemble member.
func (r *Replica) Clustered() bool { return true }

// IsLeader implements server.Replica: never.
func (r *Replica) IsLeader() bool { return false }

// Role implements server.Replica: srvr's Mode line says observer.
func (r *Replica) Role() string { return "observer" }

// Leader implements server.Replica: the ZooKeeper leader's sid (0: none).
func (r *Replica) Leader() int64 {
	up := r.upstream()
	if up == nil {
		return 0
	}
	id, _ := up.Leader()
	return id
}

// LeaderCh implements server.Replica: a mirror never leads.
func (r *Replica) LeaderCh() <-chan bool { return nil }

// LeaderLinkLost implements server.Replica.
func (r *Replica) LeaderLinkLost() <-chan struct{} { return r.lost }

// QuorumHealth implements server.Replica: the mirror may serve while it
// is synced with the ZooKeeper leader, its state is sound, and no resync
// happened since the server last waited for it (WaitReady): after one,
// the server drops its clients, as a ZooKeeper observer that re-syncs
// does.
func (r *Replica) QuorumHealth(time.Duration) error {
	up := r.upstream()
	if up == nil {
		return ErrLinkLost
	}
	if err := r.Fenced(); err != nil {
		return err
	}
	if _, ok := up.Leader(); !ok || !r.st.Synced() {
		return fmt.Errorf("%w: not synced with the ZooKeeper leader", ErrLinkLost)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen != r.servedGen {
		return fmt.Errorf("%w: re-synced with the ZooKeeper leader", ErrLinkLost)
	}
	return nil
}

// WaitReady implements server.Replica: it returns once the mirror is
// synced with the ZooKeeper leader.
func (r *Replica) WaitReady(ctx context.Context) error {
	up := r.upstream()
	if up == nil {
		return ErrLinkLost
	}
	if err := up.WaitUpToDate(ctx); err != nil {
		return err
	}
	if err := r.Fenced(); err != nil {
		return err
	}
	r.mu.Lock()
	r.servedGen = r.gen
	r.mu.Unlock()
	return nil
}

// Fenced implements server.Replica: a mirror whose state diverged from
// ZooKeeper's, or whose observer stopped, serves nobody.
func (r *Replica) Fenced() error {
	err := r.st.Err()
	if up := r.upstream(); up != nil {
		err = errors.Join(err, up.Err())
	}
	return err
}

// Membership implements server.Replica: ZooKeeper's leader knows it.
func (r *Replica) Membership() replication.Membership { return replication.Membership{} }

// ChangeMembership implements server.Replica: refused.
func (r *Replica) ChangeMembership(context.Context, replication.MembershipChange) error {
	return ErrNotSupported
}

// LearnPeers implements server.Replica: nothing to learn.
func (r *Replica) LearnPeers([]replication.Peer) {}

// TransferLeadership implements server.Replica: refused.
func (r *Replica) TransferLeadership(context.Context, int64) (int64, error) {
	return 0, ErrNotSupported
}

// ProposalSizes implements server.Replica: a mirror proposes nothing.
func (r *Replica) ProposalSizes() (last, minimum, maximum int64) { return 0, 0, 0 }

// SlowLogSyncs implements server.Replica: a mirror writes no log.
func (r *Replica) SlowLogSyncs() int64 { return 0 }

// Digests implements server.Replica: the State checks ZooKeeper's digest
// at every transaction instead (Fenced reports a mismatch).
func (r *Replica) Digests() []replication.DigestRecord { return nil }

// DigestMismatches implements server.Replica.
func (r *Replica) DigestMismatches() int64 { return 0 }

// Close fails what waits and stops watching the leader link. The
// Upstream is its owner's to close.
func (r *Replica) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.stopped.Store(true)
	held := r.held
	r.held = nil
	following := r.up != nil
	r.mu.Unlock()
	close(r.stop)
	if following {
		<-r.done
	}
	r.failWaiters(func(*waiter) bool { return true }, ErrReplicaClosed)
	for _, w := range held {
		w.ch <- replication.Outcome{Err: ErrReplicaClosed}
	}
	return nil
}
