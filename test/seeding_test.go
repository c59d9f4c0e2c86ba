package test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
	"github.com/zkserverd/zkserverd/txnlog"
)

// How a data directory becomes an ensemble member's (replication's
// discovery.go, steward.go, identity.go):
//   (a) a standalone server's data directory, restarted with server lines
//       next to empty members, grows into an ensemble;
//   (b) so does the output of `zkserverd import`;
//   (c) a member whose data directory was wiped catches up from the
//       leader;
//   (d) a majority wiped while the member that kept the data is down does
//       not found a second history (identity_test.go).
// A brand-new ensemble of empty members still starts with no extra step:
// every ensemble test (startEnsemble) starts one.

// znode is what a client reads of a znode.
type znode struct {
	data []byte
	stat zk.Stat
	acl  []zk.ACL
}

func (z znode) equal(o znode) bool {
	return bytes.Equal(z.data, o.data) && z.stat == o.stat && slices.Equal(z.acl, o.acl)
}

func (z znode) String() string {
	return fmt.Sprintf("data=%q stat=%+v acl=%v", z.data, z.stat, z.acl)
}

// readTree reads every znode reachable from "/" through c.
func readTree(c *zk.Conn) (map[string]znode, error) {
	out := make(map[string]znode)
	var visit func(p string) error
	visit = func(p string) error {
		data, st, err := c.Get(p)
		if err != nil {
			return fmt.Errorf("get %s: %w", p, err)
		}
		acl, _, err := c.GetACL(p)
		if err != nil {
			return fmt.Errorf("getACL %s: %w", p, err)
		}
		out[p] = znode{data: data, stat: *st, acl: acl}
		kids, _, err := c.Children(p)
		if err != nil {
			return fmt.Errorf("children %s: %w", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			if err := visit(path.Join(p, k)); err != nil {
				return err
			}
		}
		return nil
	}
	return out, visit("/")
}

// treeDiff describes how got differs from want on want's paths that keep
// does not exclude, and lists got's extra paths when extra is set; "" when
// they agree.
func treeDiff(want, got map[string]znode, keep func(string) bool, extra bool) string {
	var b strings.Builder
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if keep != nil && !keep(p) {
			continue
		}
		g, ok := got[p]
		switch {
		case !ok:
			fmt.Fprintf(&b, "  %s missing\n", p)
		case !g.equal(want[p]):
			fmt.Fprintf(&b, "  %s is\n    %v\n  want\n    %v\n", p, g, want[p])
		}
	}
	if extra {
		for p := range got {
			if _, ok := want[p]; !ok && (keep == nil || keep(p)) {
				fmt.Fprintf(&b, "  %s unexpected\n", p)
			}
		}
	}
	return b.String()
}

// notConfig leaves out /zookeeper/config, which an ensemble's first
// leader seeds from the server lines.
func notConfig(p string) bool { return p != "/zookeeper/config" }

// dialMember opens a session on addr with alice's digest credentials (the
// seeded trees hold nodes only alice may change) and waits up to 10 s for
// it.
func dialMember(addr string) (*zk.Conn, error) {
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		return nil, err
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			}
		case <-deadline:
			c.Close()
			return nil, fmt.Errorf("no session on %s within 10s", addr)
		}
	}
}

// readMemberTree reads the whole tree through member addr after a sync.
func readMemberTree(addr string) (map[string]znode, error) {
	c, err := dialMember(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Sync("/"); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	return readTree(c)
}

// awaitSameTrees reads the whole tree through each member of addrs (after
// a sync) until every member returns the same znodes (data, Stat, ACL),
// holding want's znodes that keep selects and, when exact, nothing else
// that keep selects; it allows 20 s and fails the test with the last
// difference. It returns the tree.
func awaitSameTrees(t *testing.T, addrs []string, want map[string]znode, keep func(string) bool, exact bool) map[string]znode {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var problem string
		var first map[string]znode
		for i, addr := range addrs {
			got, err := readMemberTree(addr)
			if err != nil {
				problem = fmt.Sprintf("member at %s: %v", addr, err)
				break
			}
			if d := treeDiff(want, got, keep, exact); d != "" {
				problem = fmt.Sprintf("member at %s differs from the expected tree:\n%s", addr, d)
				break
			}
			if i == 0 {
				first = got
			} else if d := treeDiff(first, got, nil, true); d != "" {
				problem = fmt.Sprintf("member at %s differs from the member at %s:\n%s", addr, addrs[0], d)
				break
			}
		}
		if problem == "" {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatalf("members' trees still differ after 20s: %s", problem)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// awaitSameZnodeCount waits up to 10 s until every member's mntr reports
// the same zk_znode_count, at least least, and returns it.
func awaitSameZnodeCount(t *testing.T, addrs []string, least int) string {
	t.Helper()
	var counts []string
	testutil.Eventually(t, 10*time.Second, "equal zk_znode_count on every member", func() bool {
		counts = counts[:0]
		for _, addr := range addrs {
			counts = append(counts, testutil.FourLetterLine(addr, "mntr", "zk_znode_count\t"))
		}
		var n int
		_, err := fmt.Sscan(counts[0], &n)
		return err == nil && n >= least && !slices.ContainsFunc(counts, func(c string) bool { return c != counts[0] })
	})
	return counts[0]
}

// loggedEnsemble is an ensemble whose members' logs are kept, member by
// member, for assertions on what they said.
type loggedEnsemble struct {
	*ensemble
	t    *testing.T
	logs []*testutil.LogCapture
}

// newLoggedEnsemble prepares (starts nothing) size members on testConfig
// with a 300 ms tick and a 500 ms digest interval; member i's data
// directory is dirs[i] when given and not empty, a fresh one otherwise.
// Each tweak is applied to every member's configuration.
func newLoggedEnsemble(t *testing.T, size int, dirs []string, tweaks ...func(i int, c *conf.Config)) *loggedEnsemble {
	t.Helper()
	logs := make([]*testutil.LogCapture, size)
	loggers := make([]*slog.Logger, size)
	for i := range size {
		loggers[i], logs[i] = testutil.CaptureLogger(t, slog.LevelInfo)
	}
	spec := testutil.EnsembleSpec[*member]{Size: size, Ports: portPicker,
		Base: func(i int) conf.Config {
			dir := ""
			if i < len(dirs) {
				dir = dirs[i]
			}
			if dir == "" {
				dir = t.TempDir()
			}
			cfg := testConfig(t, dir)
			cfg.TickTime = 300
			cfg.InitLimit, cfg.SyncLimit = 10, 5
			cfg.DigestIntervalMs = 500
			for _, tweak := range tweaks {
				tweak(i, &cfg)
			}
			return cfg
		},
		New: func(i int, cfg conf.Config) (*member, error) {
			o := ops.New(ops.Options{})
			srv, err := server.New(server.Options{Config: cfg, Logger: loggers[i], Operator: o})
			return &member{Server: srv, ops: o}, err
		}}
	return &loggedEnsemble{ensemble: testutil.NewEnsemble(t, spec), t: t, logs: logs}
}

// node is member i's replicated state.
func (e *loggedEnsemble) node(i int) *replication.Node {
	e.t.Helper()
	n, ok := e.Member(i).Replica().(*replication.Node)
	if !ok {
		e.t.Fatalf("member %d: replica is a %T", i+1, e.Member(i).Replica())
	}
	return n
}

// addrs are the client addresses of the members given.
func (e *loggedEnsemble) addrs(members ...int) []string {
	var out []string
	for _, i := range members {
		out = append(out, e.Addr(i))
	}
	return out
}

// logMark is a position in every member's log, for linesSince.
type logMark []int

func (e *loggedEnsemble) mark() logMark {
	m := make(logMark, len(e.logs))
	for i, l := range e.logs {
		m[i] = len(l.String())
	}
	return m
}

// linesSince returns member i's log lines written after mark that contain
// every one of parts.
func (e *loggedEnsemble) linesSince(m logMark, i int, parts ...string) []string {
	return testutil.MatchingLines(e.logs[i].String()[m[i]:], parts...)
}

// awaitRefusal waits (bounded) until a member logs that it refused a
// member of another ensemble, naming both ids, and returns those lines.
func (e *loggedEnsemble) awaitRefusal(t *testing.T, m logMark, what string, ids ...string) []string {
	t.Helper()
	var refusals []string
	testutil.Eventually(t, 15*time.Second, what, func() bool {
		refusals = e.anyLinesSince(m, nil, append([]string{"level=ERROR", "refusing a member of another ensemble"}, ids...)...)
		return len(refusals) > 0
	})
	t.Logf("refusals:\n%s", strings.Join(refusals, "\n"))
	return refusals
}

// anyLinesSince is linesSince over the members given (all when none).
func (e *loggedEnsemble) anyLinesSince(m logMark, members []int, parts ...string) []string {
	if len(members) == 0 {
		for i := range e.Size() {
			members = append(members, i)
		}
	}
	var out []string
	for _, i := range members {
		for _, line := range e.linesSince(m, i, parts...) {
			out = append(out, fmt.Sprintf("member %d: %s", i+1, line))
		}
	}
	return out
}

// wipe removes member i's data directory (it is stopped).
func (e *loggedEnsemble) wipe(i int) {
	e.t.Helper()
	if e.Running(i) {
		e.t.Fatalf("wipe: member %d is running", i+1)
	}
	cfg := e.Config(i)
	for _, d := range []string{cfg.DataDir, cfg.DataLogDir} {
		if err := os.RemoveAll(d); err != nil {
			e.t.Fatal(err)
		}
	}
}

// stopAll stops every running member.
func (e *loggedEnsemble) stopAll() {
	for i := range e.Size() {
		e.Stop(i)
	}
}

// assertNotServing checks for d that none of members serves.
func (e *loggedEnsemble) assertNotServing(d time.Duration, members ...int) {
	e.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, i := range members {
			if e.Member(i).Serving() {
				e.t.Fatalf("member %d serves clients (mode %q); it must not", i+1, e.Mode(i))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertUnfenced checks that none of members (every running member when
// none is given) is fenced or saw a digest mismatch, and that they all
// belong to ensemble id (when not zero) or to one ensemble; it returns
// that ensemble.
func (e *loggedEnsemble) assertUnfenced(id txnlog.EnsembleID, members ...int) txnlog.EnsembleID {
	e.t.Helper()
	if len(members) == 0 {
		for i := range e.Size() {
			if e.Running(i) {
				members = append(members, i)
			}
		}
	}
	for _, i := range members {
		n := e.node(i)
		if err := n.Fenced(); err != nil {
			e.t.Errorf("member %d fenced: %v", i+1, err)
		}
		if m := n.DigestMismatches(); m != 0 {
			e.t.Errorf("member %d: %d digest mismatches", i+1, m)
		}
		got := n.Ensemble()
		if id.IsZero() {
			id = got
		}
		if got.IsZero() || got != id {
			e.t.Errorf("member %d belongs to ensemble %s, want %s", i+1, got, id)
		}
	}
	return id
}

// awaitEnsembleID waits up to 10 s until every running member knows the
// same ensemble id (a new ensemble's first leader proposes it) and
// returns it.
func (e *loggedEnsemble) awaitEnsembleID() txnlog.EnsembleID {
	e.t.Helper()
	var id txnlog.EnsembleID
	testutil.Eventually(e.t, 10*time.Second, "one ensemble id on every running member", func() bool {
		id = txnlog.EnsembleID{}
		for i := range e.Size() {
			if !e.Running(i) {
				continue
			}
			got := e.node(i).Ensemble()
			if got.IsZero() || (!id.IsZero() && got != id) {
				return false
			}
			id = got
		}
		return !id.IsZero()
	})
	return id
}

// startedServer is a standalone server that stop closes once.
type startedServer struct {
	*server.Server
	once sync.Once
}

func (s *startedServer) stop() { s.once.Do(func() { s.Close() }) }

// startStandalone starts a standalone server on cfg; the test's end stops
// it if the test did not.
func startStandalone(t *testing.T, cfg conf.Config) *startedServer {
	t.Helper()
	srv, err := server.New(server.Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelInfo), Operator: ops.New(ops.Options{})})
	if err != nil {
		t.Fatalf("standalone server: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		t.Fatalf("start standalone server: %v", err)
	}
	s := &startedServer{Server: srv}
	t.Cleanup(s.stop)
	return s
}

// standaloneHistory runs a standalone server on cfg, lets fill write
// through a client (with alice's credentials), reads the whole tree and
// the ensemble id the server gave its history, and stops the server.
func standaloneHistory(t *testing.T, cfg conf.Config, fill func(c *zk.Conn)) (map[string]znode, txnlog.EnsembleID) {
	t.Helper()
	s := startStandalone(t, cfg)
	defer s.stop()
	c, err := dialMember(s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if fill != nil {
		fill(c)
	}
	tree, err := readTree(c)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Replica().(*replication.Node)
	testutil.Eventually(t, 10*time.Second, "the standalone history's ensemble id", func() bool { return !n.Ensemble().IsZero() })
	return tree, n.Ensemble()
}

// aliceACL reads for anyone and does everything for alice: not the default.
var aliceACL = append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "alice", "secret")...)

// fillTree writes a few dozen persistent znodes under root: nested, with
// data (some binary), some with aliceACL, some changed and one deleted so
// that versions and cversions are not all zero. c has alice's credentials.
func fillTree(t *testing.T, c *zk.Conn, root string) {
	t.Helper()
	open := zk.WorldACL(zk.PermAll)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(root, []byte("root of "+root), 0, open))
	for g := range 4 {
		group := fmt.Sprintf("%s/g%d", root, g)
		acl := open
		if g%2 == 1 {
			acl = aliceACL
		}
		must(c.Create(group, []byte(fmt.Sprintf("group %d", g)), 0, acl))
		for n := range 8 {
			p := fmt.Sprintf("%s/n%d", group, n)
			nacl := open
			if n%3 == 0 {
				nacl = aliceACL
			}
			must(c.Create(p, []byte(fmt.Sprintf("%s=%d", p, n*g)), 0, nacl))
		}
	}
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	must(c.Create(root+"/g0/n0/deep", binary, 0, open))
	must(c.Create(root+"/g0/n0/deep/er", nil, 0, aliceACL))
	must(c.Create(root+"/g0/n0/deep/er/est", []byte("bottom"), 0, open))
	for v := range 3 {
		must(c.Set(root+"/g1/n1", []byte(fmt.Sprintf("version %d", v+1)), int32(v)))
	}
	must(c.Set(root+"/g2/n3", []byte("changed by alice"), 0))
	must(nil, c.Delete(root+"/g3/n7", 0))
	must(c.Create(root+"/g3/n8", []byte("after a delete"), 0, open))
}

// wantUnder is the part of tree under root (root included).
func wantUnder(tree map[string]znode, root string) map[string]znode {
	out := make(map[string]znode)
	for p, z := range tree {
		if p == root || strings.HasPrefix(p, root+"/") {
			out[p] = z
		}
	}
	return out
}

// TestSeedStandaloneIntoEnsemble, path (a): a standalone server's data
// directory (myid 1) restarted with server lines next to empty members
// grows into an ensemble, with 3 and 5 members, whether the empty members
// start first (they wait for it: none founds a history of its own) or it
// does. Every member then serves the standalone's tree, znode for znode
// (data, Stat, ACL), in the standalone's ensemble.
func TestSeedStandaloneIntoEnsemble(t *testing.T) {
	for _, size := range []int{3, 5} {
		for _, emptyFirst := range []bool{true, false} {
			name := fmt.Sprintf("members=%d/seeded-first", size)
			if emptyFirst {
				name = fmt.Sprintf("members=%d/empty-first", size)
			}
			t.Run(name, func(t *testing.T) { seedStandalone(t, size, emptyFirst) })
		}
	}
}

func seedStandalone(t *testing.T, size int, emptyFirst bool) {
	dir := t.TempDir()
	tree, id := standaloneHistory(t, testConfig(t, dir), func(c *zk.Conn) { fillTree(t, c, "/seed") })
	want := wantUnder(tree, "/seed")
	if len(want) < 30 {
		t.Fatalf("only %d znodes written", len(want))
	}
	e := newLoggedEnsemble(t, size, []string{dir})
	mark := e.mark()
	var all []int
	for i := range size {
		all = append(all, i)
	}
	if emptyFirst {
		for i := 1; i < size; i++ {
			e.Start(i)
		}
		// Member 1, the one with data, is down: the empty members, which
		// ask each other every 500 ms, wait (they say so at ERROR after
		// 10 s, which TestWipedMajorityWaitsForTheMemberWithData checks).
		e.assertNotServing(2*time.Second, all[1:]...)
		if lines := e.anyLinesSince(mark, nil, "bootstrapped a new ensemble"); len(lines) > 0 {
			t.Fatalf("empty members founded a history while member 1 was down:\n%s", strings.Join(lines, "\n"))
		}
		e.Start(0)
	} else {
		e.Start(0)
		for i := 1; i < size; i++ {
			e.Start(i)
		}
	}
	started := time.Now()
	e.WaitServing(0)
	t.Logf("member 1, the one with data, serves %v after it started", time.Since(started).Round(time.Millisecond))
	for i := range size {
		e.WaitServing(i)
	}
	if lines := e.anyLinesSince(mark, nil, "bootstrapped a new ensemble"); len(lines) > 0 {
		t.Errorf("a member founded a new history next to the standalone's:\n%s", strings.Join(lines, "\n"))
	}
	got := awaitSameTrees(t, e.addrs(all...), tree, notConfig, false)
	if d := treeDiff(want, got, nil, false); d != "" {
		t.Errorf("seeded tree differs from the standalone's:\n%s", d)
	}
	count := awaitSameZnodeCount(t, e.addrs(all...), len(tree))
	e.assertUnfenced(id)
	t.Logf("%d members serve the standalone's %d znodes (zk_znode_count %s) in ensemble %s", size, len(tree), count, id)

	// The ensemble works as one: a write on the last member is read on
	// the first after a sync.
	c, err := dialMember(e.Addr(size - 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/seed/after", []byte("grown"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if after := awaitSameTrees(t, e.addrs(all...), nil, nil, false); string(after["/seed/after"].data) != "grown" {
		t.Errorf("/seed/after written through member %d reads %v", size, after["/seed/after"])
	}
}

// TestSeedImportedDataDirIntoEnsemble, path (b): the output of `zkserverd
// import` (a real ZooKeeper 3.8 data directory) as member 1's data
// directory grows into a 3-member ensemble whose other members start
// empty; every member serves every imported znode.
func TestSeedImportedDataDirIntoEnsemble(t *testing.T) {
	dir := t.TempDir()
	sum, err := zkimport.Import(zkimport.Options{From: "../internal/zkimport/testdata/zk38", To: dir})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	// TTL and container nodes stay: no reaper runs during the test.
	keep := func(_ int, c *conf.Config) {
		c.ExtendedTypesEnabled = true
		c.ContainerCheckIntervalMs = int(time.Hour / time.Millisecond)
	}
	cfg := testConfig(t, dir)
	keep(0, &cfg)
	tree, id := standaloneHistory(t, cfg, nil)
	if len(tree) < sum.Nodes {
		t.Fatalf("the standalone server on the import serves %d znodes, the import wrote %d", len(tree), sum.Nodes)
	}
	e := newLoggedEnsemble(t, 3, []string{dir}, keep)
	mark := e.mark()
	e.Start(1)
	e.Start(2)
	e.Start(0)
	for i := range 3 {
		e.WaitServing(i)
	}
	if lines := e.anyLinesSince(mark, nil, "bootstrapped a new ensemble"); len(lines) > 0 {
		t.Errorf("a member founded a new history next to the import:\n%s", strings.Join(lines, "\n"))
	}
	// Two digest intervals: the members compared a checkpoint.
	time.Sleep(time.Second)
	e.assertUnfenced(id)
	got := awaitSameTrees(t, e.addrs(0, 1, 2), tree, notConfig, true)
	count := awaitSameZnodeCount(t, e.addrs(0, 1, 2), len(tree))
	e.assertUnfenced(id)
	t.Logf("3 members serve the %d imported znodes (%d in the tree, zk_znode_count %s)", sum.Nodes, len(got), count)
}

// TestWipedFollowerCatchesUp, path (c): a follower whose data directory
// was wiped while it was down restarts with the same id, joins (it does
// not found a history of its own) and serves every znode, including those
// written while it was down and after a snapshot of the leader.
func TestWipedFollowerCatchesUp(t *testing.T) {
	e := newLoggedEnsemble(t, 3, nil)
	e.Launch()
	id := e.awaitEnsembleID()
	lead := e.Leader()
	f := (lead + 1) % 3
	c, err := dialMember(e.Addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fillTree(t, c, "/before")
	e.Stop(f)
	e.wipe(f)
	fillTree(t, c, "/during")
	if err := e.node(lead).Snapshot(); err != nil {
		t.Fatalf("leader snapshot: %v", err)
	}
	if _, err := c.Set("/before/g0/n1", []byte("changed while the follower was away"), 0); err != nil {
		t.Fatal(err)
	}
	want, err := readMemberTree(e.Addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	mark := e.mark()
	e.Start(f)
	e.WaitServing(f)
	if lines := e.linesSince(mark, f, "bootstrapped a new ensemble"); len(lines) > 0 {
		t.Errorf("the wiped follower founded a new history:\n%s", strings.Join(lines, "\n"))
	}
	if len(e.linesSince(mark, f, "joining the existing ensemble")) == 0 {
		t.Errorf("the wiped follower did not say it joins the existing ensemble")
	}
	awaitSameTrees(t, e.addrs(f, (f+1)%3, (f+2)%3), want, nil, true)
	awaitSameZnodeCount(t, e.addrs(0, 1, 2), len(want))
	e.assertUnfenced(id)
}

// TestSeededMemberServesOnceAMajorityVotes: the member holding the data
// (a standalone server's, path (a)) started alone among 3 listed members
// leads with itself the only voter and serves nobody, since a write would
// be on its disk only: srvr says it is not serving and a client gets no
// session. With readonlymode.enabled it serves read-only clients
// meanwhile, as a member without a quorum does. Once a second member has
// joined and been promoted to voter, both serve, read-write; the third
// joins later.
func TestSeededMemberServesOnceAMajorityVotes(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("readonly=%v", readOnly), func(t *testing.T) { seededServesOnceAMajorityVotes(t, readOnly) })
	}
}

func seededServesOnceAMajorityVotes(t *testing.T, readOnly bool) {
	dir := t.TempDir()
	tree, id := standaloneHistory(t, testConfig(t, dir), func(c *zk.Conn) { fillTree(t, c, "/seed") })
	e := newLoggedEnsemble(t, 3, []string{dir}, func(_ int, c *conf.Config) { c.ReadOnlyModeEnabled = readOnly })
	mark := e.mark()
	e.Start(0)
	if got, want := testutil.FourLetterLine(e.Addr(0), "srvr", "This ZooKeeper instance"), "is not currently serving requests"; !strings.Contains(got, want) {
		t.Fatalf("srvr of the seeded member alone: %q, want %q", got, want)
	}
	e.assertNotServing(2500*time.Millisecond, 0)
	if m := e.node(0).Role(); m != "leader" {
		t.Fatalf("the seeded member is %q, want leader", m)
	}
	if lines := e.linesSince(mark, 0, "serving no client until a majority of the listed participants are voters", "1 of 3 participants are voters"); len(lines) != 1 {
		t.Errorf("want one line saying why the seeded member does not serve, got:\n%s", e.logs[0].String()[mark[0]:])
	}
	r := dialRaw(t, e.Addr(0))
	if _, err := r.handshake(jute.ConnectRequest{TimeOut: 6000, HasReadOnly: true}); err == nil {
		t.Fatal("a read-write client got a session on the seeded member alone")
	}
	if readOnly {
		testutil.Eventually(t, 5*time.Second, "the seeded member in read-only mode", func() bool { return e.Mode(0) == "read-only" })
		ro, _, err := roHandshake(t, e.Addr(0), true, 0, nil)
		if err != nil {
			t.Fatalf("a read-only client on the seeded member alone: %v", err)
		}
		ro.c.Close()
	}

	second := time.Now()
	e.Start(1)
	e.WaitServing(0)
	t.Logf("member 1, the one with data, serves %v after the second member started", time.Since(second).Round(time.Millisecond))
	e.WaitServing(1)
	if m := e.node(0).Membership(); m.Followers != 1 {
		t.Fatalf("member 1 serves with membership %+v, want one other voter", m)
	}
	for _, i := range []int{0, 1} {
		if m := e.Mode(i); m != "leader" && m != "follower" {
			t.Errorf("member %d serves as %q, want leader or follower", i+1, m)
		}
	}
	c, err := dialMember(e.Addr(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/seed/two-voters", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a write with 2 of 3 voters: %v", err)
	}
	want, err := readMemberTree(e.Addr(0))
	if err != nil {
		t.Fatal(err)
	}
	if d := treeDiff(tree, want, func(p string) bool { return notConfig(p) && p != "/seed" }, false); d != "" {
		t.Errorf("the seeded member's tree differs from the standalone's:\n%s", d)
	}
	e.Start(2)
	e.WaitServing(2)
	awaitSameTrees(t, e.addrs(0, 1, 2), want, nil, true)
	e.assertUnfenced(id)
}
