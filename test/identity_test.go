package test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Ensemble identities (replication/identity.go, discovery.go): a wiped
// majority does not found a second history while the member with the data
// is down, and a member whose data directory belongs to another ensemble
// is refused, with its data left as it was.

// filledEnsemble launches size logged members, writes fillTree under root
// through the leader and returns the ensemble, its id and its whole tree.
func filledEnsemble(t *testing.T, size int, root string) (*loggedEnsemble, txnlog.EnsembleID, map[string]znode) {
	t.Helper()
	e := newLoggedEnsemble(t, size, nil)
	e.Launch()
	id := e.awaitEnsembleID()
	c, err := dialMember(e.Addr(e.Leader()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fillTree(t, c, root)
	var all []int
	for i := range size {
		all = append(all, i)
	}
	return e, id, awaitSameTrees(t, e.addrs(all...), nil, nil, false)
}

// hasNoneUnder checks that tree holds nothing under root.
func hasNoneUnder(t *testing.T, tree map[string]znode, root, what string) {
	t.Helper()
	for p := range tree {
		if p == root || strings.HasPrefix(p, root+"/") {
			t.Errorf("%s holds %s, which it never had", what, p)
		}
	}
}

// TestWipedMajorityWaitsForTheMemberWithData, path (d): members 1 and 2
// of a 3-member ensemble lost their data directories while member 3 is
// down. Started, they do not found a new ensemble: they serve nobody and
// say at ERROR that they wait for member 3. Once member 3 starts, all
// three serve its data, none of it lost.
func TestWipedMajorityWaitsForTheMemberWithData(t *testing.T) {
	e, id, tree := filledEnsemble(t, 3, "/kept")
	e.stopAll()
	e.wipe(0)
	e.wipe(1)
	mark := e.mark()
	e.Start(0)
	e.Start(1)
	// They say so at ERROR after 10 s of silence from member 3.
	testutil.Eventually(t, 20*time.Second, "a wiped member saying it does not bootstrap", func() bool {
		if e.Member(0).Serving() || e.Member(1).Serving() {
			t.Fatalf("a wiped member serves while member 3 is down")
		}
		return len(e.anyLinesSince(mark, []int{0, 1}, "level=ERROR", "not bootstrapping a new ensemble", "waiting_for=3")) > 0
	})
	e.assertNotServing(2*time.Second, 0, 1)
	if lines := e.anyLinesSince(mark, nil, "bootstrapped a new ensemble"); len(lines) > 0 {
		t.Fatalf("the wiped majority founded a new history:\n%s", strings.Join(lines, "\n"))
	}
	e.Start(2)
	for i := range 3 {
		e.WaitServing(i)
	}
	awaitSameTrees(t, e.addrs(2, 0, 1), tree, nil, true)
	time.Sleep(time.Second) // two digest intervals
	e.assertUnfenced(id)
}

// TestForcedNewEnsembleRefusesTheOldMember, path (d) forced: the wiped
// members 1 and 2 started with forceNewEnsemble found a new, empty
// ensemble and serve. Member 3, with the old ensemble's data, is then
// refused: a member logs at ERROR that it refuses a member of another
// ensemble, member 3 serves nobody, the new ensemble's tree holds none of
// the old znodes, and member 3's data directory still holds the old
// ensemble: with two empty members it serves every old znode again.
func TestForcedNewEnsembleRefusesTheOldMember(t *testing.T) {
	e, oldID, oldTree := filledEnsemble(t, 3, "/old")
	e.stopAll()
	e.wipe(0)
	e.wipe(1)
	for _, i := range []int{0, 1} {
		e.Edit(i, func(c *conf.Config) { c.ForceNewEnsemble = true })
	}
	mark := e.mark()
	e.Start(0)
	e.Start(1)
	e.WaitServing(0)
	e.WaitServing(1)
	// The first forced member may start before the second listens: it
	// then names both.
	warned := false
	for _, line := range e.anyLinesSince(mark, []int{0, 1}, "level=WARN", "bootstrapping a new ensemble although some listed members did not answer") {
		warned = warned || strings.Contains(line, "did_not_answer=3") || strings.Contains(line, "did_not_answer=2,3")
	}
	if !warned {
		t.Errorf("the forced members did not warn that member 3 did not answer")
	}
	newID := e.awaitEnsembleID()
	if newID == oldID {
		t.Fatalf("the forced ensemble kept the old ensemble's id %s", oldID)
	}
	c, err := dialMember(e.Addr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/new", []byte("new ensemble"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	e.Start(2)
	e.awaitRefusal(t, mark, "a member refusing member 3", oldID.String(), newID.String())
	e.assertNotServing(3*time.Second, 2)
	if got := e.node(2).Ensemble(); got != oldID {
		t.Errorf("member 3 belongs to ensemble %s, want the old %s", got, oldID)
	}
	newTree := awaitSameTrees(t, e.addrs(0, 1), nil, nil, false)
	hasNoneUnder(t, newTree, "/old", "the new ensemble")
	if string(newTree["/new"].data) != "new ensemble" {
		t.Errorf("/new reads %v on the new ensemble", newTree["/new"])
	}

	// Member 3's data directory is intact: next to two empty members it
	// is the ensemble's data again.
	e.stopAll()
	for _, i := range []int{0, 1} {
		e.Edit(i, func(c *conf.Config) {
			c.ForceNewEnsemble = false
			dir := t.TempDir()
			c.DataDir, c.DataLogDir = dir, dir
		})
	}
	e.Start(2)
	e.Start(0)
	e.Start(1)
	for i := range 3 {
		e.WaitServing(i)
	}
	back := awaitSameTrees(t, e.addrs(2, 0, 1), oldTree, nil, true)
	hasNoneUnder(t, back, "/new", "member 3's data")
	e.assertUnfenced(oldID)
}

// TestMixedEnsemblesRefuseForeignMember: two ensembles, A and B, each with
// data of its own, stopped; A's members 1 and 2 are started with B's
// member 3 data directory as member 3 (a list that mixes two ensembles,
// or, the same thing, one member's data directory swapped for another
// ensemble's). Members 1 and 2 serve A's data; member 3 is refused (an
// ERROR naming both ensembles) and serves nobody; and B's member 3 data
// directory still holds B: restarted in B, every B member serves B's
// data.
func TestMixedEnsemblesRefuseForeignMember(t *testing.T) {
	a, idA, treeA := filledEnsemble(t, 3, "/a")
	b, idB, treeB := filledEnsemble(t, 3, "/b")
	a.stopAll()
	b.stopAll()
	b3 := b.Config(2)
	a.Edit(2, func(c *conf.Config) { c.DataDir, c.DataLogDir = b3.DataDir, b3.DataLogDir })

	mark := a.mark()
	a.Start(0)
	a.Start(1)
	a.Start(2)
	a.WaitServing(0)
	a.WaitServing(1)
	a.awaitRefusal(t, mark, "a member refusing B's member 3", idA.String(), idB.String())
	a.assertNotServing(3*time.Second, 2)
	if got := a.node(2).Ensemble(); got != idB {
		t.Errorf("member 3 (B's data directory) belongs to ensemble %s, want B's %s", got, idB)
	}
	gotA := awaitSameTrees(t, a.addrs(0, 1), treeA, nil, false)
	hasNoneUnder(t, gotA, "/b", "ensemble A")
	a.assertUnfenced(idA, 0, 1)
	if err := a.node(2).Fenced(); err != nil {
		t.Errorf("member 3 (B's data directory) fenced: %v", err)
	}

	// B's member 3 data directory is B's still.
	a.stopAll()
	for i := range 3 {
		b.Start(i)
	}
	for i := range 3 {
		b.WaitServing(i)
	}
	gotB := awaitSameTrees(t, b.addrs(2, 0, 1), treeB, nil, true)
	hasNoneUnder(t, gotB, "/a", "ensemble B")
	b.assertUnfenced(idB)
}
