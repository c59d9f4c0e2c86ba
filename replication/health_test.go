package replication

import (
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
	if _, ok := h.leaderlessFor(time.Now()); ok {
		t.Fatal("leaderless while a leader is known")
	}
	lost := time.Now()
	h.observe(raft.Observation{Data: raft.LeaderObservation{}}, false)
	h.noteLeader(false, lost.Add(time.Hour)) // a later "no leader" keeps the start
	d, ok := h.leaderlessFor(lost.Add(2 * time.Second))
	if !ok || d < 2*time.Second-10*time.Millisecond || d > 2*time.Second+time.Second {
		t.Fatalf("leaderless for %v (%v), want about 2s from the loss", d, ok)
	}
	h.observe(raft.Observation{Data: raft.LeaderObservation{LeaderID: "2"}}, false)
	if _, ok := h.leaderlessFor(time.Now()); ok {
		t.Fatal("leaderless after a new leader was observed")
	}
}
