package replication

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/txnlog"
)

// The steward runs on every member and acts while it leads:
//   - a log without an ensemble identity gets one (identity.go);
//   - every DigestInterval in which the tree changed it appends a
//     checkpoint, and after applying a checkpoint it appends its own
//     record of it for the others to compare (digest.go);
//   - in an ensemble it grows the raft membership to the members the
//     configuration lists (reconcile).

// defaultDigestInterval is the checkpoint interval when none is set.
const defaultDigestInterval = 2 * time.Second

// stewardTick is how often the steward looks at its duties.
const stewardTick = 250 * time.Millisecond

// reconcileEvery is how often a leader compares the membership with the
// configuration; catchUpEvery how often while a member it added catches
// up, and growEvery while the voter gate is closed (votergate.go: nobody
// is served until enough listed members vote, so promoting them is what
// the clients wait for).
const (
	reconcileEvery = time.Second
	catchUpEvery   = stewardTick
	growEvery      = 50 * time.Millisecond
)

// stewardState is owned by the steward goroutine.
type stewardState struct {
	lastCheckpoint time.Time
	checkpointZxid int64
	checkpointed   bool
	lastReconcile  time.Time
	// saidShort is set once the leader said it serves no client until
	// more listed members vote (cleared when it stops leading).
	saidShort bool
	// catchUpTo is, per member added as a non-voter, the last entry the
	// leader had applied when it was added: once the member applied that
	// far it is promoted to voter.
	catchUpTo map[int64]uint64
}

// digestInterval is the configured checkpoint interval.
func (n *Node) digestInterval() time.Duration {
	if n.cfg.DigestInterval > 0 {
		return n.cfg.DigestInterval
	}
	return defaultDigestInterval
}

// steward runs the leader's duties until the node closes.
func (n *Node) steward() {
	defer n.wg.Done()
	st := &stewardState{catchUpTo: make(map[int64]uint64)}
	timer := time.NewTimer(stewardTick)
	defer timer.Stop()
	for {
		select {
		case <-n.stop:
			return
		case r := <-n.checkpoints:
			if n.IsLeader() {
				n.apply(&txnlog.Control{Kind: txnlog.EntryDigest, Index: r.Index, Zxid: r.Zxid, Digest: r.Digest})
			}
			continue
		case <-timer.C:
		}
		timer.Reset(n.stewardDuties(st))
	}
}

// stewardDuties does what is due on this tick and returns when to look
// again: every stewardTick, sooner while the membership grows.
func (n *Node) stewardDuties(st *stewardState) time.Duration {
	if !n.IsLeader() {
		st.checkpointed, st.lastCheckpoint, st.saidShort = false, time.Now(), false
		return stewardTick
	}
	n.ensureIdentity()
	n.maybeCheckpoint(st)
	if !n.clustered() {
		return stewardTick
	}
	if err := n.awaitingVoters(); err != nil && !st.saidShort {
		st.saidShort = true
		n.log.Info("leading, but serving no client until a majority of the listed participants are voters: the leader adds and promotes them as they answer",
			"reason", err)
	}
	every := n.reconcileInterval(st)
	if time.Since(st.lastReconcile) >= every {
		st.lastReconcile = time.Now()
		n.reconcile(st)
		every = n.reconcileInterval(st)
	}
	return min(stewardTick, every)
}

// reconcileInterval is how often the leader reconciles now: growEvery
// while the voter gate is closed, catchUpEvery while an added member
// catches up, reconcileEvery otherwise.
func (n *Node) reconcileInterval(st *stewardState) time.Duration {
	switch {
	case n.votersShort():
		return growEvery
	case len(st.catchUpTo) > 0:
		return catchUpEvery
	}
	return reconcileEvery
}

// apply appends a control entry and waits for it (bounded).
func (n *Node) apply(c *txnlog.Control) error {
	err := n.raft.Apply(c.Encode(), n.cfg.ForwardTimeout).Error()
	if err != nil && !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipLost) {
		n.log.Warn("control entry not committed", "kind", c.Kind, "err", err)
	}
	return err
}

// ensureIdentity gives a history without an identity one: a new ensemble,
// a new standalone server, or a data directory of a build before them.
func (n *Node) ensureIdentity() {
	if !n.ident.get().IsZero() {
		return
	}
	id := txnlog.NewEnsembleID()
	if n.apply(&txnlog.Control{Kind: txnlog.EntryIdentity, Ensemble: id}) == nil {
		n.log.Info("this history had no ensemble identity; proposed one", "ensemble", id.String())
	}
}

// maybeCheckpoint appends a checkpoint once an interval passed since the
// last one (or since this member began to lead) when the tree changed.
func (n *Node) maybeCheckpoint(st *stewardState) {
	zxid := n.LastZxid()
	if time.Since(st.lastCheckpoint) < n.digestInterval() || (st.checkpointed && zxid == st.checkpointZxid) {
		return
	}
	if n.apply(&txnlog.Control{Kind: txnlog.EntryCheckpoint}) == nil {
		st.checkpointed, st.checkpointZxid, st.lastCheckpoint = true, zxid, time.Now()
	}
}

// noteCheckpoint hands a recorded checkpoint to the steward, which
// appends the leader's record of it; it runs on the FSM goroutine and
// never blocks (a record dropped when the steward is behind is only a
// comparison skipped).
func (n *Node) noteCheckpoint(r DigestRecord) {
	select {
	case n.checkpoints <- r:
	default:
	}
}

// reconcile grows raft's membership towards the members this leader's
// configuration lists: a listed member missing from the membership, that
// answers and belongs to no other ensemble, is added as a non-voter; once
// it has applied what the leader had when it was added, a participant is
// promoted to voter. A member missing from the replicated configuration
// (/zookeeper/config, once set) is left alone: a reconfig removed it.
// Nothing is ever removed here; removal is reconfig's.
func (n *Node) reconcile(st *stewardState) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	n.fixOwnAddress(servers)
	replicated := n.replicatedMembers()
	listed := make(map[int64]bool, len(n.cfg.Peers))
	for _, p := range n.cfg.Peers {
		if p.ID == n.cfg.ServerID || (replicated != nil && !replicated[p.ID]) {
			continue
		}
		listed[p.ID] = true
		n.reconcileMember(st, p, servers)
	}
	// A member a reconfig removed while it caught up is no longer waited
	// for (catchUpTo also sets how often reconcile runs).
	maps.DeleteFunc(st.catchUpTo, func(id int64, _ uint64) bool { return !listed[id] })
}

// reconcileMember brings one listed member into the membership.
func (n *Node) reconcileMember(st *stewardState, p Peer, servers []raft.Server) {
	srv, in := findServer(servers, p.ID)
	if in && (srv.Suffrage == raft.Voter || p.Observer) {
		delete(st.catchUpTo, p.ID)
		return
	}
	status, err := n.probe(p)
	if err != nil || (!status.Ensemble.IsZero() && status.Ensemble != n.ident.get()) {
		return
	}
	id, addr := serverID(p.ID), raft.ServerAddress(p.RaftAddr)
	if !in {
		if err := n.raft.AddNonvoter(id, addr, 0, n.cfg.ForwardTimeout).Error(); err != nil {
			n.log.Warn("could not add a listed member", "member", p.ID, "err", err)
			return
		}
		st.catchUpTo[p.ID] = n.appliedIndex()
		n.log.Info("added a member the configuration lists as a non-voter; it catches up before it votes",
			"member", p.ID, "observer", p.Observer)
		return
	}
	target, ok := st.catchUpTo[p.ID]
	if !ok {
		st.catchUpTo[p.ID] = n.appliedIndex()
		return
	}
	if status.Applied < target {
		return
	}
	if err := n.raft.AddVoter(id, addr, 0, n.cfg.ForwardTimeout).Error(); err != nil {
		n.log.Warn("could not promote a caught-up member", "member", p.ID, "err", err)
		return
	}
	delete(st.catchUpTo, p.ID)
	n.log.Info("promoted a caught-up member to voter", "member", p.ID, "applied", status.Applied)
}

// appliedIndex is the last entry this member's FSM applied.
func (n *Node) appliedIndex() uint64 {
	i, _ := n.applied.get()
	return i
}

// fixOwnAddress records this leader's configured quorum address in the
// membership when it differs (a standalone data directory grown into an
// ensemble carries the standalone server's placeholder).
func (n *Node) fixOwnAddress(servers []raft.Server) {
	self, ok := n.self()
	srv, in := findServer(servers, n.cfg.ServerID)
	if !ok || !in || srv.Suffrage != raft.Voter || string(srv.Address) == self.RaftAddr {
		return
	}
	if err := n.raft.AddVoter(srv.ID, raft.ServerAddress(self.RaftAddr), 0, n.cfg.ForwardTimeout).Error(); err != nil {
		n.log.Warn("could not record this member's address in the membership", "err", err)
	}
}

func findServer(servers []raft.Server, id int64) (raft.Server, bool) {
	for _, s := range servers {
		if s.ID == serverID(id) {
			return s, true
		}
	}
	return raft.Server{}, false
}

// replicatedMembers returns the member ids /zookeeper/config lists, nil
// while it is empty.
func (n *Node) replicatedMembers() map[int64]bool {
	roles := n.replicatedRoles()
	if roles == nil {
		return nil
	}
	ids := make(map[int64]bool, len(roles))
	for id := range roles {
		ids[id] = true
	}
	return ids
}

// checkMembership compares, at start, the membership this member's log
// decided with the server lines of its configuration, and says so when
// they differ: the log's membership is used (a reconfig changes it, and
// the leader grows it to listed members, see reconcile), and the lines
// are kept for addresses only. A standalone server's data directory
// started with server lines is the one difference that is expected.
func (n *Node) checkMembership() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil || !n.clustered() {
		return
	}
	stored := f.Configuration().Servers
	if len(stored) == 1 && !strings.Contains(string(stored[0].Address), ":") {
		n.log.Info("a standalone server's data directory: the ensemble's leader adds the members the configuration lists")
		return
	}
	if describeServers(stored) == describePeers(n.cfg.Peers) {
		return
	}
	n.log.Warn("the membership recorded in this member's log differs from its configuration's server lines; the log's is used (membership changes go through reconfig, docs/operations.md)",
		"log_membership", describeServers(stored), "configured", describePeers(n.cfg.Peers))
}

// describeServers and describePeers render memberships alike: sorted ids,
// "o" marking a non-voter.
func describeServers(servers []raft.Server) string {
	var ids []string
	for _, s := range servers {
		id := string(s.ID)
		if s.Suffrage != raft.Voter {
			id += "o"
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

func describePeers(peers []Peer) string {
	var ids []string
	for _, p := range peers {
		id := strconv.FormatInt(p.ID, 10)
		if p.Observer {
			id += "o"
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}
