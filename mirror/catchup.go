package mirror

import (
	"fmt"
)

// Catching up after a snapshot.
//
// A ZooKeeper leader serializes the snapshot of a SNAP sync while it goes
// on applying writes, so the snapshot may already hold some of the
// transactions that follow its zxid (ZooKeeper calls it fuzzy), and its
// own learners replay those idempotently. So does the mirror: from a
// Snapshot until UpToDate, transactions are applied to ZooKeeper's own
// state model (zkimport.Replay: a create of an existing node, a delete of
// a missing one are skipped, versions are set as the txns carry them),
// and UpToDate turns the result into the tree, checking it against the
// digest the last transaction carried. The strict, checked apply (apply.go)
// and the Applied callback start with the transactions after UpToDate: a
// server serves no client during the sync phase anyway.

// catchUp applies one transaction of the sync phase to the model. A
// leader starts sending the transactions after the zxid its tree was at
// when the sync began, which may be before the zxid of the snapshot it
// then serializes: a transaction at or below last (the snapshot's zxid, or
// the last one caught up) is replayed too, as ZooKeeper's learner does,
// but each must come after the one before it.
func (s *State) catchUp(last, zxid int64, data []byte) error {
	if s.caught > 0 && uint64(zxid) <= uint64(s.lastFed) {
		return s.fail(zxid, fmt.Errorf("%w: zxid %s after %s", ErrDiverged, zxidString(zxid), zxidString(s.lastFed)))
	}
	if uint64(zxid) > uint64(last) {
		if err := checkNext(last, zxid); err != nil {
			return s.fail(zxid, err)
		}
	}
	t, err := s.catchup.Apply(data)
	if err != nil {
		return s.fail(zxid, fmt.Errorf("%w: %w", ErrDiverged, err))
	}
	if t.Header.Zxid != zxid {
		return s.fail(zxid, fmt.Errorf("%w: the entry's header has zxid %s", ErrDiverged, zxidString(t.Header.Zxid)))
	}
	s.caught++
	s.lastFed, s.lastDigest = zxid, t.Digest
	s.mu.Lock()
	if uint64(zxid) > uint64(s.lastZxid) {
		s.lastZxid = zxid
	}
	s.mu.Unlock()
	return nil
}

// finishCatchUp makes the model the tree and the session table, when
// transactions were applied to it since the Snapshot.
func (s *State) finishCatchUp() error {
	r, caught, want := s.catchup, s.caught, s.lastDigest
	s.catchup, s.caught, s.lastDigest = nil, 0, nil
	if uint64(s.lastFed) <= uint64(s.snapZxid) {
		// The last transaction was one the snapshot held already: its
		// digest is of an older tree.
		want = nil
	}
	if caught == 0 {
		return nil
	}
	img := r.Image()
	tree, err := s.load(img)
	if err != nil {
		return fmt.Errorf("%w: the state after the sync phase: %w", ErrDiverged, err)
	}
	sessions := sessionTable(img)
	dig := newDigester(tree, s.auth.token)
	s.mu.Lock()
	s.tree, s.sessions, s.dig = tree, sessions, dig
	s.mu.Unlock()
	s.log.Info("mirror caught up after its snapshot", "txns", caught, "nodes", len(img.Nodes), "sessions", len(img.Sessions))
	if want != nil && want.Version == zkDigestVersion && want.Tree != dig.value.Load() {
		return fmt.Errorf("%w: after the sync phase the tree digest is %#x, ZooKeeper's %#x",
			ErrDiverged, uint64(dig.value.Load()), uint64(want.Tree))
	}
	return nil
}
