package replication

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/txnlog"
)

// An FSM snapshot is txnlog's envelope (txnlog.SnapshotHead, the session
// table) followed by the tree's own stream (datatree); txnlog.ReadSnapshot
// reads it back.

// Snapshot implements raft.FSM. It runs on the FSM goroutine between two
// applies and only captures the state: the session table is encoded (it is
// small) and the tree opens a copy-on-write snapshot, which costs nothing
// per znode. Persist, which raft runs on another goroutine while applies go
// on, writes the tree as it was here, at this log index.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.sinceSnapshot.Store(0)
	tree := f.tree.Load()
	head, err := txnlog.SnapshotHead(txnlog.SnapshotHeader{LastZxid: f.lastZxid.Load(), AppliedIndex: f.last,
		Ensemble: f.ensemble, Digest: tree.Digest(), HasDigest: true}, f.sessions.Load())
	if err != nil {
		return nil, fmt.Errorf("replication: snapshot: %w", err)
	}
	s := &fsmSnapshot{head: head}
	snap, err := tree.Snapshot()
	switch {
	case errors.Is(err, datatree.ErrSnapshotOpen):
		// An earlier snapshot was never released: serialize here, under
		// the tree's read lock, as a fallback.
		var buf bytes.Buffer
		if err := tree.WriteSnapshot(&buf); err != nil {
			return nil, fmt.Errorf("replication: snapshot tree: %w", err)
		}
		s.data = buf.Bytes()
	case err != nil:
		return nil, fmt.Errorf("replication: snapshot tree: %w", err)
	default:
		s.tree = snap
	}
	return s, nil
}

// Restore implements raft.FSM: it loads a snapshot into new structures and
// swaps them in. It refuses a snapshot whose tree does not match the
// digest recorded with it, and one of another ensemble than this
// member's; raft then keeps the state it had (or, at startup, tries an
// older snapshot).
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := txnlog.ReadSnapshot(rc, f.treeCfg)
	if err != nil {
		return fmt.Errorf("replication: restore: %w", err)
	}
	if err := f.checkRestored(st); err != nil {
		f.log.Error("snapshot refused", "zxid", fmt.Sprintf("%#x", st.LastZxid), "err", err)
		return fmt.Errorf("replication: restore: %w", err)
	}
	f.install(st)
	return nil
}

// errDigestMismatch is wrapped by the error for a snapshot whose tree
// does not match the digest recorded with it.
var errDigestMismatch = errors.New("the tree does not match the snapshot's digest")

// checkRestored checks a snapshot read back against its own header: the
// digest of the tree as loaded, and the ensemble it names.
func (f *fsm) checkRestored(st *txnlog.SnapshotState) error {
	if st.HasDigest {
		if got := st.Tree.Digest(); got != st.Digest {
			return fmt.Errorf("%w: loaded %016x, recorded %016x", errDigestMismatch, got, st.Digest)
		}
	}
	if own := f.ident.get(); !st.Ensemble.IsZero() && !own.IsZero() && own != st.Ensemble {
		return fmt.Errorf("%w: the snapshot belongs to ensemble %s, this member to %s", ErrForeignEnsemble, st.Ensemble, own)
	}
	return nil
}

// install replaces the FSM's state with st.
func (f *fsm) install(st *txnlog.SnapshotState) {
	f.ensemble = txnlog.EnsembleID{}
	f.learnIdentity(st.Ensemble, fmt.Sprintf("snapshot at zxid %#x", st.LastZxid))
	f.tree.Store(st.Tree)
	f.sessions.Store(st.Sessions)
	f.lastZxid.Store(st.LastZxid)
	f.last = st.AppliedIndex
	// The state holds every entry up to the snapshot's applied index, and
	// raft delivers none of them again: WaitApplied must not wait for
	// them. The term of that entry is not recorded; a commit push naming
	// term 0 is ignored by the follower, and the next entry applied names
	// its own.
	f.applied.set(st.AppliedIndex, 0)
	if f.observer != nil {
		f.observer.Restored()
	}
}

// fsmSnapshot is a captured FSM state: the header and session table
// encoded at capture, and the tree's open snapshot (or, in the fallback,
// its bytes).
type fsmSnapshot struct {
	head []byte
	tree *datatree.Snapshot
	data []byte
}

// Persist implements raft.FSMSnapshot. It writes the tree while applies
// continue; the tree keeps what they change until Release.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("replication: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(w io.Writer) error {
	if _, err := w.Write(s.head); err != nil {
		return err
	}
	if s.tree == nil {
		_, err := w.Write(s.data)
		return err
	}
	_, err := s.tree.WriteTo(w)
	return err
}

// Release implements raft.FSMSnapshot: the tree stops keeping copies.
func (s *fsmSnapshot) Release() {
	if s.tree != nil {
		s.tree.Release()
	}
}
