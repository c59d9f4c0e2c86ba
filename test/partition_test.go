package test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
)

// proxiedEnsemble starts size members (ensembleSpec, with tweaks) where
// every member reaches every other through its own proxy (one per
// direction and port), so single links can be cut: member i's zoo.cfg
// names proxies for its peers, as an operator could name any address.
// links[i][2*j] carries i's traffic to j's quorum port, links[i][2*j+1] to
// its election port.
func proxiedEnsemble(t *testing.T, size int, tweaks ...func(*conf.Config)) (*ensemble, [][]*linkProxy) {
	t.Helper()
	links := make([][]*linkProxy, size)
	for i := range links {
		links[i] = make([]*linkProxy, 2*size)
	}
	spec := ensembleSpec(t, size, tweaks...)
	spec.Link = func(from, to int, line conf.Server) conf.Server {
		q := newLinkProxy(t, net.JoinHostPort(line.Host, strconv.Itoa(line.PeerPort)))
		f := newLinkProxy(t, net.JoinHostPort(line.Host, strconv.Itoa(line.ElectionPort)))
		links[from][2*to], links[from][2*to+1] = q, f
		line.PeerPort, line.ElectionPort = q.port(), f.port()
		return line
	}
	return testutil.StartEnsemble(t, spec), links
}

// isolate cuts (or heals) every link between member m and the others.
func isolate(links [][]*linkProxy, m int, cut bool) {
	state := linkOpen
	if cut {
		state = linkCut
	}
	setLinks(links, func(from, to int) bool { return from == m || to == m }, state)
}

// setLinks puts every link from member from to member to for which sel
// holds into state.
func setLinks(links [][]*linkProxy, sel func(from, to int) bool, state linkState) {
	for i := range links {
		for j, p := range links[i] {
			if p != nil && sel(i, j/2) {
				p.setState(state)
			}
		}
	}
}

func TestEnsemblePartitionedLeader(t *testing.T) {
	e, links := proxiedEnsemble(t, 3)
	old := e.Leader()
	minority, _ := testutil.Connect(t, e.Addr(old), 4*time.Second)
	majorityMember := (old + 1) % 3
	majority, _ := testutil.Connect(t, e.Addr(majorityMember), 4*time.Second)
	if _, err := majority.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	isolate(links, old, true)
	var newLead int
	testutil.Eventually(t, 15*time.Second, "a new leader in the majority", func() bool {
		for i := range e.Size() {
			if i != old && e.Mode(i) == "leader" {
				newLead = i
				return true
			}
		}
		return false
	})
	t.Logf("member %d isolated; member %d leads", old+1, newLead+1)
	testutil.Eventually(t, 10*time.Second, "a write in the majority", func() bool {
		_, err := majority.Create("/during", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil
	})
	// The isolated member accepts no write, and stops serving clients
	// altogether (no stale reads), as a ZooKeeper member without a leader.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := minority.Create("/minority", nil, 0, zk.WorldACL(zk.PermAll)); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the isolated member accepted a write")
		}
	case <-ctx.Done():
	}
	testutil.Eventually(t, 10*time.Second, "the isolated member refusing clients", func() bool {
		out, _ := testutil.FourLetter(e.Addr(old), "srvr")
		return out == "This ZooKeeper instance is not currently serving requests\n"
	})

	isolate(links, old, false)
	c, _ := testutil.Connect(t, e.Addr(old), 4*time.Second)
	testutil.Eventually(t, 15*time.Second, "the old leader catching up", func() bool {
		ok, _, err := c.Exists("/during")
		return err == nil && ok
	})
	if ok, _, _ := c.Exists("/minority"); ok {
		t.Fatal("a write made in the minority survived the partition")
	}
}

// TestEnsembleDeposedLeaderRestarts: a leader cut off with writes of its
// own in flight appends entries no one else has; after the heal the new
// leader makes it drop them (the tail of its log is truncated). Restarted
// on its data directory, it must open that log, serve, and hold the
// majority's writes but none of its own. (raft-wal before v0.4.1 left the
// truncated segment without its index block, and raft panicked when the
// member restarted: hashicorp/raft-wal#31.)
func TestEnsembleDeposedLeaderRestarts(t *testing.T) {
	e, links := proxiedEnsemble(t, 3)
	old := e.Leader()
	minority, _ := testutil.Connect(t, e.Addr(old), 4*time.Second)
	if _, err := minority.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	isolate(links, old, true)
	// Writes sent to the cut-off leader: appended to its log, never committed.
	for i := range 5 {
		minority.Set("/x", []byte("minority"+strconv.Itoa(i)), -1)
	}
	majority, _ := testutil.Connect(t, e.Addr((old+1)%3), 4*time.Second)
	testutil.Eventually(t, 15*time.Second, "writes in the majority", func() bool {
		_, err := majority.Set("/x", []byte("majority"), -1)
		return err == nil
	})
	isolate(links, old, false)
	testutil.Eventually(t, 15*time.Second, "the old leader catching up", func() bool {
		out, _ := testutil.FourLetter(e.Addr(old), "srvr")
		return strings.Contains(out, "Mode: follower")
	})
	e.Stop(old)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("member %d did not restart after its log tail was truncated: %v", old+1, p)
			}
		}()
		e.Start(old)
	}()
	e.WaitServing(old)
	c, _ := testutil.Connect(t, e.Addr(old), 4*time.Second)
	if _, err := c.Sync("/x"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.Get("/x"); err != nil || string(data) != "majority" {
		t.Fatalf("/x on the restarted member = %q, %v; want the majority's write", data, err)
	}
}
