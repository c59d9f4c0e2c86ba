package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Joining or founding an ensemble. A member that starts with an empty
// data directory does not bootstrap at once: it asks every member its
// configuration lists for its status (fwdStatus, on the election port)
// until one of these holds:
//   - a member holds state: this member waits for that ensemble's leader
//     to replicate to it (it is in the leader's membership, or the
//     leader's steward adds it, steward.go); it never starts a history of
//     its own next to one that exists;
//   - every listed member answered and none holds state: a brand-new
//     ensemble; every member bootstraps the same membership, which raft
//     allows;
//   - ForceNewEnsemble is set and no member that answered holds state:
//     bootstrap now (an operator's decision, docs/operations.md).
// Otherwise it keeps asking, and says at ERROR which members it waits for:
// a member that did not answer may hold the ensemble's data (a majority
// wiped while the member that kept its data is down must not start a
// second history that would later overwrite it, or be overwritten).

// fwdStatus asks any member (leader or not) for its memberStatus.
const fwdStatus byte = 5

// memberStatus is what a member tells about itself.
type memberStatus struct {
	ServerID int64
	Ensemble txnlog.EnsembleID
	HasState bool   // its raft log or snapshots hold anything
	Applied  uint64 // the last entry its FSM applied
}

const memberStatusSize = 8 + 16 + 1 + 8

func (s memberStatus) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(s.ServerID))
	b = append(b, s.Ensemble[:]...)
	b = append(b, boolByte(s.HasState))
	return binary.BigEndian.AppendUint64(b, s.Applied)
}

func decodeMemberStatus(b []byte) (memberStatus, error) {
	if len(b) != memberStatusSize {
		return memberStatus{}, fmt.Errorf("status of %d bytes", len(b))
	}
	s := memberStatus{ServerID: int64(binary.BigEndian.Uint64(b))}
	copy(s.Ensemble[:], b[8:24])
	s.HasState = b[24] != 0
	s.Applied = binary.BigEndian.Uint64(b[25:])
	return s, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// status is this member's memberStatus.
func (n *Node) status() memberStatus {
	return memberStatus{ServerID: n.cfg.ServerID, Ensemble: n.ident.get(), HasState: n.raft.LastIndex() > 0,
		Applied: n.appliedIndex()}
}

// probeTimeout bounds one status request.
const probeTimeout = 2 * time.Second

// probe asks member p for its status over a connection of its own.
func (n *Node) probe(p Peer) (memberStatus, error) {
	timeout := min(n.cfg.ForwardTimeout, probeTimeout)
	c, err := n.network().Dial(p.ForwardAddr, timeout)
	if err != nil {
		return memberStatus{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	frame := binary.BigEndian.AppendUint32(nil, 9)
	frame = append(frame, fwdStatus)
	frame = binary.BigEndian.AppendUint64(frame, 1)
	if _, err := c.Write(frame); err != nil {
		return memberStatus{}, fmt.Errorf("send status request: %w", err)
	}
	reply, err := jute.ReadFrame(bufio.NewReader(c), 1024, nil)
	if err != nil {
		return memberStatus{}, fmt.Errorf("read status: %w", err)
	}
	if len(reply) < 9 || reply[8] != fwdOK {
		return memberStatus{}, errors.New("status refused (a member of a build without it?)")
	}
	return decodeMemberStatus(reply[9:])
}

// discoverInterval is how often an empty member asks the others again.
const discoverInterval = 500 * time.Millisecond

// discoverErrorAfter is how long an empty member waits for silent members
// before it says so at ERROR (members started together answer sooner),
// and discoverErrorEvery how often it says it again.
const (
	discoverErrorAfter = 10 * time.Second
	discoverErrorEvery = 30 * time.Second
)

// discover runs on an ensemble member that started empty, until it
// bootstrapped, or state arrived from a leader, or the node closes.
func (n *Node) discover() {
	defer n.wg.Done()
	lastSaid := time.Now().Add(discoverErrorAfter - discoverErrorEvery)
	joining := int64(0)
	for {
		if n.raft.LastIndex() > 0 {
			n.log.Info("state arrived from the ensemble's leader; this member has joined")
			return
		}
		holder, missing := n.survey()
		switch {
		case holder != 0:
			if joining != holder {
				n.log.Info("joining the existing ensemble: waiting for its leader to replicate to this member",
					"member_with_state", holder)
				joining = holder
			}
		case len(missing) == 0 || n.cfg.ForceNewEnsemble:
			n.bootstrapDiscovered(missing)
			return
		case time.Since(lastSaid) >= discoverErrorEvery:
			lastSaid = time.Now()
			n.log.Error("not bootstrapping a new ensemble: this member's data directory is empty and some listed members did not answer; they may hold the ensemble's data. Start them; if their data is lost for good, see docs/operations.md (--force-new-ensemble)",
				"waiting_for", idList(missing))
		}
		select {
		case <-n.stop:
			return
		case <-time.After(discoverInterval):
		}
	}
}

// survey asks every other listed member for its status. It returns a
// member that holds state (0: none answered that it does) and the members
// that did not answer.
func (n *Node) survey() (holder int64, missing []int64) {
	for _, p := range n.cfg.Peers {
		if p.ID == n.cfg.ServerID {
			continue
		}
		st, err := n.probe(p)
		switch {
		case err != nil:
			missing = append(missing, p.ID)
		case st.HasState && holder == 0:
			holder = p.ID
		}
	}
	return holder, missing
}

// bootstrapDiscovered bootstraps the configured membership on a member
// that found no state anywhere.
func (n *Node) bootstrapDiscovered(missing []int64) {
	if len(missing) > 0 {
		n.log.Warn("bootstrapping a new ensemble although some listed members did not answer (--force-new-ensemble)",
			"did_not_answer", idList(missing))
	}
	err := n.raft.BootstrapCluster(n.peers.configuration(n.cfg.Peers)).Error()
	if err != nil {
		n.log.Info("not bootstrapped: state arrived meanwhile", "err", err)
		return
	}
	n.log.Info("bootstrapped a new ensemble: every listed member is empty", "members", len(n.cfg.Peers))
}

// idList renders member ids for a log line.
func idList(ids []int64) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += strconv.FormatInt(id, 10)
	}
	return s
}
