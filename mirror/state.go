package mirror

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
)

// Errors wrapped by the State's methods.
var (
	// ErrDiverged reports a transaction the mirror could not apply as
	// ZooKeeper did; the State is broken from then on.
	ErrDiverged = errors.New("mirror: diverged from ZooKeeper")
	// ErrBroken is returned by every update of a broken State but
	// Snapshot, which replaces it.
	ErrBroken = errors.New("mirror: state is broken")
	// ErrCannotTruncate reports a Truncate to another zxid than the
	// State's: the mirror keeps no history to go back to.
	ErrCannotTruncate = errors.New("mirror: cannot truncate")
)

// Applied describes one applied transaction, for the server to answer the
// request (if it is one of its sessions') and to fire watches.
type Applied struct {
	SessionID int64
	Cxid      int32
	Zxid      int64
	Time      int64 // the leader's wall time, ms
	// Type is ZooKeeper's header type: the request's opcode, OpError for
	// a request that failed (Result.Err is its code), OpCreateSession or
	// OpCloseSession.
	Type jute.OpCode
	// Result is what the tree answered: the reply's err and body and the
	// watch events. Session transactions and failed requests get one
	// built to ZooKeeper's answer. It is nil in Options.Applying.
	Result *datatree.Result
	// Timeout is a createSession's session timeout (ms).
	Timeout int32
}

// Options configures a State.
type Options struct {
	// Tree configures the tree. ExtendedTypesEnabled is always on and
	// EnforceQuota always off: ZooKeeper has decided what the
	// transactions do. Authorizer (nil: no checks) checks the server's
	// reads only.
	Tree datatree.Config
	// Logger receives divergences (Error), snapshots and sync (Info);
	// nil discards.
	Logger *slog.Logger
	// Applied, if set, is called for every applied transaction; see the
	// package doc for when and under which lock.
	Applied func(Applied)
	// Applying, if set, is called before each transaction that Applied
	// will report, with no lock held (Result is nil): a server runs the
	// reads queued before its own write against the state before it.
	Applying func(Applied)
}

// State is a replica of a ZooKeeper ensemble's state. See the package doc.
type State struct {
	opts Options
	log  *slog.Logger
	auth *applyAuth
	cfg  datatree.Config

	// Owned by the updating goroutine (Snapshot, Txn, UpToDate): dig is
	// the ZooKeeper digest of the tree (replaced under mu, so that Digest
	// may read it from any goroutine); catchup, when not nil, holds the
	// state since the last Snapshot while the sync phase lasts (see
	// catchup.go), with caught the number of transactions it applied and
	// lastDigest the digest the last one carried.
	dig        *digester
	catchup    *zkimport.Replay
	caught     int
	lastFed    int64 // the zxid of the last transaction caught up
	snapZxid   int64 // the zxid of the last Snapshot
	lastDigest *zkimport.TxnDigest

	// mu guards the fields below. It is never held while a
	// transaction is applied.
	mu       sync.Mutex
	tree     *datatree.Tree
	sessions *session.Table
	lastZxid int64
	err      error // set when broken
	synced   bool  // UpToDate seen since the last Snapshot
}

// New returns a State holding a new ZooKeeper server's state: the system
// nodes, no sessions, zxid 0.
func New(opts Options) *State {
	s := &State{opts: opts, log: opts.Logger, auth: newApplyAuth(opts.Tree.Authorizer)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.cfg = opts.Tree
	s.cfg.ExtendedTypesEnabled = true
	s.cfg.EnforceQuota = false
	s.cfg.Authorizer = s.auth
	s.tree = datatree.New(s.cfg)
	s.sessions = session.NewTable()
	s.dig = newDigester(s.tree, s.auth.token)
	return s
}

// Tree returns the current tree; a Snapshot replaces it.
func (s *State) Tree() *datatree.Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree
}

// Sessions returns the current session table; a Snapshot replaces it.
func (s *State) Sessions() *session.Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// LastZxid is the zxid of the last transaction applied, or of the
// snapshot loaded when none has been since (0 when empty).
func (s *State) LastZxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastZxid
}

// Err returns the divergence that broke the State, or nil. A server must
// not serve a broken State.
func (s *State) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Synced reports whether the sync phase is over (UpToDate since the last
// Snapshot) and the State is not broken.
func (s *State) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced && s.err == nil
}

// Digest returns ZooKeeper's digest of the current tree (DigestCalculator
// version 2), as the transactions' TxnDigest carries it. Any goroutine
// may call it; while transactions are applied the value moves with them.
func (s *State) Digest() int64 {
	s.mu.Lock()
	d := s.dig
	s.mu.Unlock()
	return d.value.Load()
}

// UpToDate records that the sync phase is over. The transactions applied
// since the last Snapshot become the tree (catchup.go); if that fails, the
// State is broken.
func (s *State) UpToDate() {
	if s.Err() == nil && s.catchup != nil {
		if err := s.finishCatchUp(); err != nil {
			s.fail(s.LastZxid(), err)
			return
		}
	}
	s.mu.Lock()
	s.synced = true
	zxid := s.lastZxid
	s.mu.Unlock()
	s.log.Info("mirror is up to date", "zxid", zxidString(zxid))
}

// Truncate drops the transactions after zxid. The mirror keeps no history,
// so only zxid == LastZxid (nothing to drop) succeeds.
func (s *State) Truncate(zxid int64) error {
	_, last, err := s.current()
	if err != nil {
		return err
	}
	if zxid != last {
		return fmt.Errorf("%w to %s: the state is at %s", ErrCannotTruncate, zxidString(zxid), zxidString(last))
	}
	return nil
}

// Snapshot replaces the whole state with the one r holds: exactly the
// bytes of ZooKeeper's SerializeUtils.serializeSnapshot, read from r and
// no further. zxid is the snapshot's last zxid. On error the State is
// broken.
func (s *State) Snapshot(zxid int64, r *bufio.Reader) error {
	img, err := zkimport.ReadSnapshotBody(r)
	if err != nil {
		return s.fail(zxid, fmt.Errorf("mirror: read snapshot %s: %w", zxidString(zxid), err))
	}
	tree, err := s.load(img)
	if err != nil {
		return s.fail(zxid, fmt.Errorf("mirror: load snapshot %s: %w", zxidString(zxid), err))
	}
	sessions := sessionTable(img)
	dig := newDigester(tree, s.auth.token)
	newest := newestZxid(img)
	s.mu.Lock()
	s.tree, s.sessions, s.lastZxid, s.err, s.synced = tree, sessions, zxid, nil, false
	s.dig = dig
	s.mu.Unlock()
	img.LastZxid = zxid
	s.catchup, s.caught, s.lastDigest, s.snapZxid = zkimport.NewReplay(img), 0, nil, zxid
	s.log.Info("mirror loaded a snapshot", "zxid", zxidString(zxid), "nodes", len(img.Nodes),
		"sessions", len(img.Sessions), "digest", fmt.Sprintf("%#x", dig.value.Load()))
	if uint64(newest) > uint64(zxid) {
		s.log.Info("the snapshot is fuzzy: it holds changes after its zxid", "zxid", zxidString(zxid), "newest", zxidString(newest))
	}
	return nil
}

// load builds a tree from a snapshot's nodes, every stat as stored.
func (s *State) load(img *zkimport.Image) (*datatree.Tree, error) {
	l := datatree.NewLoader(s.cfg)
	for _, n := range img.Nodes {
		st := n.Stat
		err := l.Add(datatree.StoredNode{Path: n.Path, Data: n.Data, ACL: n.ACL,
			Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime, Pzxid: st.Pzxid,
			Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner})
		if err != nil {
			return nil, err
		}
	}
	return l.Finish()
}

// sessionTable returns a table of img's sessions.
func sessionTable(img *zkimport.Image) *session.Table {
	t := session.NewTable()
	for id, timeout := range img.Sessions {
		t.Add(id, timeout)
	}
	return t
}

// newestZxid returns the highest zxid any node's stat records.
func newestZxid(img *zkimport.Image) int64 {
	var z uint64
	for _, n := range img.Nodes {
		z = max(z, uint64(n.Stat.Czxid), uint64(n.Stat.Mzxid), uint64(n.Stat.Pzxid))
	}
	return int64(z)
}

// Txn applies one committed transaction, data as ZooKeeper's
// Util.marshallTxnEntry wrote it. Any error breaks the State.
func (s *State) Txn(zxid int64, data []byte) error {
	tree, last, err := s.current()
	if err != nil {
		return err
	}
	if s.catchup != nil {
		return s.catchUp(last, zxid, data)
	}
	if err := checkNext(last, zxid); err != nil {
		return s.fail(zxid, err)
	}
	t, err := zkimport.DecodeTxn(data)
	if err != nil {
		return s.fail(zxid, fmt.Errorf("%w: %w", ErrDiverged, err))
	}
	if t.Header.Zxid != zxid {
		return s.fail(zxid, fmt.Errorf("%w: the entry's header has zxid %s", ErrDiverged, zxidString(t.Header.Zxid)))
	}
	if s.opts.Applying != nil {
		h := t.Header
		s.opts.Applying(Applied{SessionID: h.ClientID, Cxid: h.Cxid, Zxid: h.Zxid, Time: h.Time, Type: h.Type, Timeout: t.Op.Timeout})
	}
	if err := s.apply(tree, t); err != nil {
		return s.fail(zxid, fmt.Errorf("%w: %s of session %#x: %w", ErrDiverged, t.Header.Type, t.Header.ClientID, err))
	}
	s.mu.Lock()
	s.lastZxid = zxid
	s.mu.Unlock()
	return nil
}

// current returns the tree and the last zxid, or the error that broke
// the State.
func (s *State) current() (*datatree.Tree, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrBroken, s.err)
	}
	return s.tree, s.lastZxid, nil
}

// fail breaks the State with err, logs it and returns it.
func (s *State) fail(zxid int64, err error) error {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.log.Error("mirror state is broken: stop serving until a new snapshot", "zxid", zxidString(zxid), "err", err)
	return err
}

// checkNext accepts zxid after last: the next counter of last's epoch, or
// the first transaction (counter 1) of a later epoch.
func checkNext(last, zxid int64) error {
	le, lc := uint64(last)>>32, uint64(last)&0xffffffff
	ze, zc := uint64(zxid)>>32, uint64(zxid)&0xffffffff
	switch {
	case ze == le && zc == lc+1:
		return nil
	case ze > le && zc == 1:
		return nil
	}
	return fmt.Errorf("%w: zxid %s does not follow %s", ErrDiverged, zxidString(zxid), zxidString(last))
}

// zxidString formats a zxid as ZooKeeper's logs do.
func zxidString(z int64) string { return fmt.Sprintf("0x%x", uint64(z)) }
