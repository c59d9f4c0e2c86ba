package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

func TestParseServerRoles(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[int64]bool
	}{
		{"participants", "server.1=h1:2888:3888;2181\nserver.2=h2:2888:3888:participant;2181\n",
			map[int64]bool{1: false, 2: false}},
		{"observer", "server.1=h1:2888:3888\nserver.4=h4:2888:3888:OBSERVER;0.0.0.0:2181\n",
			map[int64]bool{1: false, 4: true}},
		{"ipv6 and version", "server.3=[::1]:2888:3888:observer\nversion=100000000\n",
			map[int64]bool{3: true}},
		{"junk skipped", "server.x=h:1:2\nfoo=bar\n\nserver.2=h2:1:2:participant\n",
			map[int64]bool{2: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseServerRoles(tc.text); !maps.Equal(got, tc.want) {
				t.Fatalf("parseServerRoles = %v, want %v", got, tc.want)
			}
		})
	}
}

// standaloneDir writes a standalone server's data directory holding a few
// znodes and returns it.
func standaloneDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	solo, err := Open(Config{ServerID: 1, DataDir: dir, ForceSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer solo.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := solo.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if o := await(t, solo.Submit(createTxn(fmt.Sprintf("/seed%d", i)))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("standalone write: %+v", o)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the standalone identity", func() bool { return !solo.Ensemble().IsZero() })
	return dir
}

// A member seeded with data leads alone at first, with itself the only
// voter: it is not ready to serve (WaitReady, QuorumHealth) until a second
// listed member has joined and been promoted, so that every acknowledged
// write is on two of the three listed members' disks. The joined member is
// not ready before either.
func TestSeededLeaderWaitsForAMajorityOfVoters(t *testing.T) {
	c := &testCluster{t: t}
	for i := 1; i <= 3; i++ {
		c.peers = append(c.peers, Peer{ID: int64(i), RaftAddr: freeAddr(t), ForwardAddr: freeAddr(t)})
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.dirs[0] = standaloneDir(t)
	c.nodes = make([]*Node, 3)
	c.cfgHook = func(cfg *Config, _ *seams) { cfg.Logger = testutil.Logger(t, slog.LevelInfo) }
	t.Cleanup(c.closeAll)
	c.start(0)
	seed := c.nodes[0]
	if c.leader() != 0 {
		t.Fatal("the seeded member does not lead")
	}
	const silence = time.Second
	end := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		err := seed.QuorumHealth(silence)
		if !errors.Is(err, ErrAwaitingVoters) || !strings.Contains(err.Error(), "1 of 3 participants are voters") {
			t.Fatalf("QuorumHealth of a leader alone among 3 listed members: %v, want %q", err, "1 of 3 participants are voters")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err := seed.WaitReady(ctx)
	cancel()
	if !errors.Is(err, ErrAwaitingVoters) {
		t.Fatalf("WaitReady of a leader alone among 3 listed members: %v, want ErrAwaitingVoters", err)
	}

	joined := time.Now()
	c.start(1)
	// The joined member is not ready while it is a non-voter either: it
	// would forward writes that the seed commits alone.
	for deadline := time.Now().Add(15 * time.Second); seed.QuorumHealth(silence) != nil && time.Now().Before(deadline); {
		if c.nodes[1].QuorumHealth(silence) == nil && seed.Membership().Followers == 0 {
			t.Fatal("the joined member is in a working quorum while the seed is the only voter")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := seed.WaitReady(ctx); err != nil {
		t.Fatalf("the seeded member once a second one joined: %v", err)
	}
	t.Logf("the seeded member is ready %v after the second member started", time.Since(joined).Round(time.Millisecond))
	if m := seed.Membership(); m.Followers != 1 || m.Observers != 0 {
		t.Fatalf("ready with membership %+v, want one other voter", m)
	}
	for i, n := range c.nodes[:2] {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		if err := n.QuorumHealth(silence); err != nil {
			t.Fatalf("member %d with 2 of 3 voters: %v", i+1, err)
		}
	}
	if !hasNode(c.nodes[1], "/seed2") {
		t.Fatal("the joined member lacks the seed's data")
	}
	c.start(2)
	testutil.Eventually(t, 15*time.Second, "the third member a voter", func() bool {
		return seed.Membership().Followers == 2
	})
}

// The listed participants leave observers out, and a normal ensemble's
// members (bootstrapped with every participant a voter) pass the gate at
// once, the observer too.
func TestVoterGateIgnoresObservers(t *testing.T) {
	c := newTestCluster(t, 4, 4)
	for i, n := range c.nodes {
		if got, want := n.listedParticipants(), map[int64]bool{1: true, 2: true, 3: true}; !maps.Equal(got, want) {
			t.Fatalf("member %d lists participants %v, want %v", i+1, got, want)
		}
		if err := n.awaitingVoters(); err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
	}
}
