package replication

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestPeerHealthLeaderlessWindow: the leaderless time counts from the loss
// of the last known leader, not from later observations of no leader, and
// ends when a leader is known again; before any leader it is not counted.
func TestPeerHealthLeaderlessWindow(t *testing.T) {
	var h peerHealth
	if _, ok := h.leaderlessFor(time.Now()); ok {
		t.Fatal("leaderless before any leader was known")
	}
	h.observe(raft.Observation{Data: raft.LeaderObservation{LeaderID: "1"}}, false)
	// Asked while a leader is observed (raft may have lost it already, the
	// observation being late): just lost.
	if d, ok := h.leaderlessFor(time.Now()); !ok || d != 0 {
		t.Fatalf("after a leader: leaderless %v (%v), want 0 (true)", d, ok)
	}
	lost := time.Now()
	h.observe(raft.Observation{Data: raft.LeaderObservation{}}, false)
	h.noteLeader(false, lost.Add(time.Hour)) // a later "no leader" keeps the start
	d, ok := h.leaderlessFor(lost.Add(2 * time.Second))
	if !ok || d < 2*time.Second-10*time.Millisecond || d > 2*time.Second+time.Second {
		t.Fatalf("leaderless for %v (%v), want about 2s from the loss", d, ok)
	}
	h.observe(raft.Observation{Data: raft.LeaderObservation{LeaderID: "2"}}, false)
	if d, _ := h.leaderlessFor(time.Now()); d != 0 {
		t.Fatalf("leaderless for %v after a new leader was observed, want 0", d)
	}
}

// TestForwarderRetiredConnIsNoBrokenLink: a forwarding connection closed on
// purpose at a leader change does not mark the link to that leader broken
// when its reads or writes fail; any other connection's failure does.
func TestForwarderRetiredConnIsNoBrokenLink(t *testing.T) {
	n := &Node{link: newLeaderLink()}
	f := newForwarder(n)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	f.retired.Store(&a)
	f.linkBroke(a, "1")
	if n.link.brokenTo("1") {
		t.Fatal("the retired connection's failure marked the link broken")
	}
	f.linkBroke(b, "1")
	if !n.link.brokenTo("1") {
		t.Fatal("a live connection's failure did not mark the link broken")
	}
}
