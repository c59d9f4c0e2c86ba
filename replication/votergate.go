package replication

// The voter gate: an ensemble member serves only while raft's voters cover
// a majority of the participants its configuration lists. A member seeded
// with data (a standalone data directory, an import, a takeover) bootstraps
// raft with itself as the only voter and leads at once; until the leader
// has promoted enough listed members (steward.go, reconcile), a commit is
// on its disk only, and the project's rule is that a write is acknowledged
// once it is on disk on a quorum. Apache ZooKeeper would not serve either
// with one of three participants up.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/jute"
)

// ErrAwaitingVoters is wrapped by the voter gate's complaint: fewer of the
// listed participants are raft voters than a majority of them.
var ErrAwaitingVoters = errors.New("replication: waiting for listed members to join")

// voterGate remembers whether the gate has opened since Open. Once it has,
// a smaller voter set is a reconfig's doing (raft's voters shrink only by
// RemoveServer, and /zookeeper/config follows the membership change a
// moment later), and the gate stays open: a member removed by reconfig
// never stops the others from serving.
type voterGate struct {
	opened atomic.Bool
	closed atomic.Bool // it was found closed before it opened
}

// awaitingVoters reports why this member may not serve yet under the
// voter gate, nil when it may: a standalone server always may; an
// ensemble member once the listed participants that are raft voters are a
// majority of the listed participants (and from then on, see voterGate).
// Observers are never counted.
func (n *Node) awaitingVoters() error {
	if !n.clustered() || n.gate.opened.Load() {
		return nil
	}
	listed := n.listedParticipants()
	if len(listed) == 0 {
		return nil
	}
	voters := n.listedVoters(listed)
	if voters >= len(listed)/2+1 {
		if n.gate.opened.CompareAndSwap(false, true) && n.gate.closed.Load() {
			n.log.Info("a majority of the listed participants are voters", "voters", voters, "participants", len(listed))
		}
		return nil
	}
	n.gate.closed.Store(true)
	return fmt.Errorf("%w: %d of %d participants are voters", ErrAwaitingVoters, voters, len(listed))
}

// votersShort reports whether the voter gate is closed: the leader then
// grows the membership promptly (steward.go).
func (n *Node) votersShort() bool { return n.awaitingVoters() != nil }

// listedVoters counts the members of listed that raft's latest
// configuration has as voters.
func (n *Node) listedVoters(listed map[int64]bool) int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 64)
		if err == nil && s.Suffrage == raft.Voter && listed[id] {
			voters++
		}
	}
	return voters
}

// listedParticipants returns the participants (not observers) this
// member's configuration lists, as reconcile decides "listed":
// /zookeeper/config's server lines once it is set (a reconfig changes
// them), the configuration's server lines before.
func (n *Node) listedParticipants() map[int64]bool {
	if roles := n.replicatedRoles(); roles != nil {
		out := make(map[int64]bool, len(roles))
		for id, observer := range roles {
			if !observer {
				out[id] = true
			}
		}
		return out
	}
	out := make(map[int64]bool, len(n.cfg.Peers))
	for _, p := range n.cfg.Peers {
		if !p.Observer {
			out[p.ID] = true
		}
	}
	return out
}

// replicatedRoles returns, for each member /zookeeper/config lists,
// whether it is an observer; nil while the node is empty.
func (n *Node) replicatedRoles() map[int64]bool {
	data, _, code := n.Tree().GetData(configPath, nil, nil)
	if code != jute.OK || len(data) == 0 {
		return nil
	}
	return parseServerRoles(string(data))
}

// parseServerRoles reads "server.N=host:port:port[:role][;client]" lines
// (other lines, such as version=, are skipped) and returns, per id,
// whether its role is observer.
func parseServerRoles(text string) map[int64]bool {
	roles := make(map[int64]bool)
	for _, line := range strings.Split(text, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		num, isServer := strings.CutPrefix(key, "server.")
		if !ok || !isServer {
			continue
		}
		id, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			continue
		}
		addr, _, _ := strings.Cut(value, ";")
		roles[id] = strings.HasSuffix(strings.ToLower(strings.TrimSpace(addr)), ":observer")
	}
	return roles
}
