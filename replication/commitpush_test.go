package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// TestLeaderPushesCommitsToFollowers: followers ask the leader for its
// commits; once every follower asks, a write on the leader reaches their
// trees through the push (a hint given) and the leader appends no barrier
// for it.
func TestLeaderPushesCommitsToFollowers(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	ln := c.nodes[lead]
	testutil.Eventually(t, 10*time.Second, "every follower asks the leader for commits", ln.pushesCover)
	for i := 0; i < 20; i++ {
		path := fmt.Sprintf("/pushed%d", i)
		if o := await(t, ln.Submit(createTxn(path))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("write %s: %+v", path, o)
		}
		for m, n := range c.nodes {
			testutil.Eventually(t, 5*time.Second, fmt.Sprintf("member %d applies %s", m+1, path), func() bool {
				_, _, code := n.Tree().GetData(path, nil, nil)
				return code == jute.OK
			})
		}
	}
	time.Sleep(50 * time.Millisecond) // a nudge would have appended its barrier by now
	if b, cmd := lastOfType(t, ln, raft.LogBarrier), lastOfType(t, ln, raft.LogCommand); b > cmd {
		t.Fatalf("the leader appended a barrier (%d) after its last write (%d) although every follower takes pushes", b, cmd)
	}
	// A push that failed on a loaded machine is asked again only after
	// commitPushRetry: write on for a while before calling it missing.
	hinted := func() bool {
		for m, n := range c.nodes {
			if m != lead && n.hints.given.Load() == 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(3 * commitPushRetry)
	for i := 0; !hinted() && time.Now().Before(deadline); i++ {
		if o := await(t, ln.Submit(createTxn(fmt.Sprintf("/more%d", i)))); o.Err != nil {
			t.Fatalf("write: %+v", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for m, n := range c.nodes {
		if m != lead && n.hints.given.Load() == 0 {
			t.Fatalf("member %d applied the leader's writes for %v without one pushed commit hint", m+1, 3*commitPushRetry)
		}
	}
}

// TestIdleLeaderHoldsCommitRequests: with nothing new applied, a commit
// request waits for the next applied entry (up to commitPollWait), even
// after raft applied a barrier, which the FSM never sees: the followers
// ask about once a second, not round after round.
func TestIdleLeaderHoldsCommitRequests(t *testing.T) {
	c := newTestCluster(t, 3)
	ln := c.nodes[c.leader()]
	testutil.Eventually(t, 10*time.Second, "every follower asks the leader for commits", ln.pushesCover)
	if err := ln.raft.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	asks := func() int64 {
		ln.pushers.mu.Lock()
		defer ln.pushers.mu.Unlock()
		return ln.pushers.asks
	}
	before := asks()
	time.Sleep(2 * commitPollWait)
	// Two followers, each asking at most once per commitPollWait, and
	// once more around the barrier.
	if n := asks() - before; n > 8 {
		t.Fatalf("the followers asked %d times in %v of an idle leader", n, 2*commitPollWait)
	}
}

// TestEntryIDWire pins the commit's wire form and refuses other lengths,
// such as an older leader's bare index.
func TestEntryIDWire(t *testing.T) {
	e := entryID{index: 1<<40 + 7, term: 3}
	b := e.encode(nil)
	if len(b) != 16 {
		t.Fatalf("encoded %d bytes, want 16", len(b))
	}
	if got, ok := decodeEntryID(b); !ok || got != e {
		t.Fatalf("decoded %+v %v, want %+v", got, ok, e)
	}
	for _, n := range []int{0, 8, 15, 17} {
		if _, ok := decodeEntryID(make([]byte, n)); ok {
			t.Fatalf("a %d-byte body decoded", n)
		}
	}
}
