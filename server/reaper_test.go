package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// reapClock is a manual session.Clock: Now moves only with Advance and the
// ticker fires only when a test sends on ticks.
type reapClock struct {
	now    time.Time
	ticks  chan time.Time
	period chan time.Duration
}

func newReapClock() *reapClock {
	return &reapClock{now: time.UnixMilli(1_700_000_000_000), ticks: make(chan time.Time), period: make(chan time.Duration, 1)}
}

func (c *reapClock) Now() time.Time          { return c.now }
func (c *reapClock) Advance(d time.Duration) { c.now = c.now.Add(d) }
func (c *reapClock) NewTicker(d time.Duration) session.Ticker {
	c.period <- d
	return reapTicker{c.ticks}
}

type reapTicker struct{ c chan time.Time }

func (t reapTicker) C() <-chan time.Time { return t.c }
func (t reapTicker) Stop()               {}

// fakeReapNode applies every submitted txn at once, at the clock's time, to
// a real tree. beforeReap, if set, runs before a deleteContainer is applied.
type fakeReapNode struct {
	t          *testing.T
	tree       *datatree.Tree
	clock      *reapClock
	zxid       int64
	follower   bool
	reaps      []string
	beforeReap func(path string)
}

func newFakeReapNode(t *testing.T, cfg datatree.Config) *fakeReapNode {
	return &fakeReapNode{t: t, tree: datatree.New(cfg), clock: newReapClock()}
}

func (f *fakeReapNode) Clustered() bool      { return f.follower }
func (f *fakeReapNode) IsLeader() bool       { return !f.follower }
func (f *fakeReapNode) Tree() *datatree.Tree { return f.tree }
func (f *fakeReapNode) apply(op jute.OpCode, req jute.Record) *datatree.Result {
	f.zxid++
	return f.tree.Apply(&datatree.Txn{Type: op, Time: f.clock.Now().UnixMilli(), Request: req}, f.zxid, nil)
}

func (f *fakeReapNode) Submit(t *txnlog.Txn) <-chan replication.Outcome {
	if t.Tree.Type == jute.OpDeleteContainer {
		path := t.Tree.Request.(*jute.PathRequest).Path
		f.reaps = append(f.reaps, path)
		if f.beforeReap != nil {
			f.beforeReap(path)
		}
	}
	res := f.apply(t.Tree.Type, t.Tree.Request)
	ch := make(chan replication.Outcome, 1)
	ch <- replication.Outcome{Zxid: f.zxid, Result: res}
	return ch
}

func (f *fakeReapNode) must(op jute.OpCode, req jute.Record) {
	f.t.Helper()
	if r := f.apply(op, req); r.Err != jute.OK {
		f.t.Fatalf("%v: %v", op, r.Err)
	}
}

func (f *fakeReapNode) create(op jute.OpCode, path string) {
	f.t.Helper()
	f.must(op, &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe})
}

func (f *fakeReapNode) createTTL(path string, ttl int64) {
	f.t.Helper()
	f.must(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: jute.ModePersistentWithTTL, TTL: ttl})
}

func (f *fakeReapNode) exists(path string) bool {
	_, code := f.tree.Exists(path, nil)
	return code == jute.OK
}

// expect checks which paths exist.
func (f *fakeReapNode) expect(present, gone []string) {
	f.t.Helper()
	for _, p := range present {
		if !f.exists(p) {
			f.t.Errorf("%s was reaped", p)
		}
	}
	for _, p := range gone {
		if f.exists(p) {
			f.t.Errorf("%s was not reaped", p)
		}
	}
}

func reaperConfig(mutate func(*conf.Config)) conf.Config {
	cfg := conf.Default()
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

func newTestReaper(f *fakeReapNode, cfg conf.Config) *reaper {
	return newReaper(f, cfg, f.clock, slog.New(slog.DiscardHandler))
}

func TestReaperContainers(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{})
	r := newTestReaper(f, reaperConfig(func(c *conf.Config) { c.ContainerMaxNeverUsedIntervalMs = 10_000 }))
	f.create(jute.OpCreateContainer, "/used")
	f.create(jute.OpCreate, "/used/child")
	f.must(jute.OpDelete, &jute.DeleteRequest{Path: "/used/child", Version: -1})
	f.create(jute.OpCreateContainer, "/never")
	f.create(jute.OpCreateContainer, "/busy")
	f.create(jute.OpCreate, "/busy/child")
	if n := r.check(context.Background()); n != 1 {
		t.Fatalf("first check reaped %d", n)
	}
	f.expect([]string{"/never", "/busy"}, []string{"/used"})
	f.clock.Advance(10 * time.Second)
	if n := r.check(context.Background()); n != 0 {
		t.Fatalf("never-used container reaped at exactly maxNeverUsed")
	}
	f.clock.Advance(time.Millisecond)
	if n := r.check(context.Background()); n != 1 {
		t.Fatalf("never-used container not reaped after maxNeverUsed")
	}
	f.expect([]string{"/busy"}, []string{"/never"})
}

func TestReaperTTL(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{ExtendedTypesEnabled: true})
	r := newTestReaper(f, conf.Default())
	f.createTTL("/plain", 1000)
	f.createTTL("/modified", 1000)
	f.createTTL("/parent", 1000)
	f.create(jute.OpCreate, "/parent/child")
	f.clock.Advance(900 * time.Millisecond)
	f.must(jute.OpSetData, &jute.SetDataRequest{Path: "/modified", Data: []byte("x"), Version: -1})
	f.clock.Advance(101 * time.Millisecond) // 1001 ms after the creates
	r.check(context.Background())
	f.expect([]string{"/modified", "/parent"}, []string{"/plain"})
	f.clock.Advance(900 * time.Millisecond) // 1001 ms after the setData
	r.check(context.Background())
	f.expect([]string{"/parent"}, []string{"/modified"})
	f.clock.Advance(time.Hour)
	r.check(context.Background())
	f.expect([]string{"/parent"}, nil)
}

// TestReaperRecheck: a node modified between the reaper's look and the
// apply of its delete is kept.
func TestReaperRecheck(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{ExtendedTypesEnabled: true})
	r := newTestReaper(f, conf.Default())
	f.createTTL("/t", 1000)
	f.create(jute.OpCreateContainer, "/c")
	f.create(jute.OpCreate, "/c/x")
	f.must(jute.OpDelete, &jute.DeleteRequest{Path: "/c/x", Version: -1})
	f.clock.Advance(2 * time.Second)
	f.beforeReap = func(path string) {
		if path == "/t" {
			f.must(jute.OpSetData, &jute.SetDataRequest{Path: "/t", Version: -1})
		} else {
			f.create(jute.OpCreate, path+"/late")
		}
	}
	if n := r.check(context.Background()); n != 0 {
		t.Fatalf("reaped %d nodes that changed meanwhile", n)
	}
	if len(f.reaps) != 2 {
		t.Fatalf("proposed %q, want both", f.reaps)
	}
	f.expect([]string{"/t", "/c"}, nil)
}

// TestReaperContainerChain: Curator-style parent containers go one level
// per check.
func TestReaperContainerChain(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{})
	r := newTestReaper(f, conf.Default())
	f.create(jute.OpCreateContainer, "/a")
	f.create(jute.OpCreateContainer, "/a/b")
	f.create(jute.OpCreate, "/a/b/leaf")
	r.check(context.Background())
	f.expect([]string{"/a", "/a/b"}, nil)
	f.must(jute.OpDelete, &jute.DeleteRequest{Path: "/a/b/leaf", Version: -1})
	r.check(context.Background())
	f.expect([]string{"/a"}, []string{"/a/b"})
	r.check(context.Background())
	f.expect(nil, []string{"/a"})
}

func TestReaperFollowerDoesNothing(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{})
	f.follower = true
	r := newTestReaper(f, conf.Default())
	f.create(jute.OpCreateContainer, "/c")
	f.create(jute.OpCreate, "/c/x")
	f.must(jute.OpDelete, &jute.DeleteRequest{Path: "/c/x", Version: -1})
	if n := r.check(context.Background()); n != 0 || len(f.reaps) != 0 {
		t.Fatalf("follower proposed %q", f.reaps)
	}
}

func TestReaperRateLimit(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{})
	r := newTestReaper(f, reaperConfig(func(c *conf.Config) { c.ContainerMaxPerMinute = 2 }))
	for _, p := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
		f.create(jute.OpCreateContainer, p)
		f.create(jute.OpCreate, p+"/x")
		f.must(jute.OpDelete, &jute.DeleteRequest{Path: p + "/x", Version: -1})
	}
	steps := []struct {
		advance time.Duration
		want    int
	}{{0, 2}, {0, 0}, {30 * time.Second, 1}, {29 * time.Second, 0}, {time.Hour, 2}, {time.Hour, 1}}
	for i, s := range steps {
		f.clock.Advance(s.advance)
		if n := r.check(context.Background()); n != s.want {
			t.Fatalf("step %d: reaped %d, want %d", i, n, s.want)
		}
	}
	if got := strings.Join(f.reaps, ","); got != "/a,/b,/c,/d,/e,/f" {
		t.Errorf("order %s", got)
	}
}

// TestReaperLoop: the first check comes one interval after start, a tick
// runs a whole pass before the next tick is taken, and cancel stops it.
func TestReaperLoop(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{})
	r := newTestReaper(f, reaperConfig(func(c *conf.Config) { c.ContainerCheckIntervalMs = 1234 }))
	f.create(jute.OpCreateContainer, "/c")
	f.create(jute.OpCreate, "/c/x")
	f.must(jute.OpDelete, &jute.DeleteRequest{Path: "/c/x", Version: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	if d := <-f.clock.period; d != 1234*time.Millisecond {
		t.Errorf("ticker period %v", d)
	}
	if !f.exists("/c") {
		t.Fatal("reaped before the first tick")
	}
	f.clock.ticks <- f.clock.Now()
	f.clock.ticks <- f.clock.Now() // taken only after the first pass ended
	if f.exists("/c") {
		t.Error("not reaped at the first tick")
	}
	cancel()
	<-done
}

func TestReaperLogsQuotaWarnings(t *testing.T) {
	f := newFakeReapNode(t, datatree.Config{})
	var logs bytes.Buffer
	r := newReaper(f, conf.Default(), f.clock, slog.New(slog.NewTextHandler(&logs, nil)))
	f.create(jute.OpCreate, "/q")
	f.create(jute.OpCreate, "/zookeeper/quota/q")
	f.must(jute.OpCreate, &jute.CreateRequest{Path: "/zookeeper/quota/q/zookeeper_limits", Data: []byte("count=1,bytes=-1"), ACL: jute.OpenACLUnsafe})
	f.create(jute.OpCreate, "/zookeeper/quota/q/zookeeper_stats")
	f.create(jute.OpCreate, "/q/a")
	f.create(jute.OpCreate, "/q/b")
	r.check(context.Background())
	out := logs.String()
	if strings.Count(out, "quota exceeded") != 1 || !strings.Contains(out, "times=2") ||
		!strings.Contains(out, "path=/q") || !strings.Contains(out, "value=3") || !strings.Contains(out, "limit=1") {
		t.Errorf("log:\n%s", out)
	}
	logs.Reset()
	r.check(context.Background())
	if strings.Contains(logs.String(), "quota exceeded") {
		t.Errorf("logged the same warnings again:\n%s", logs.String())
	}
}

func TestEnforceQuotaConfig(t *testing.T) {
	tests := []struct {
		extra map[string]string
		want  bool
	}{
		{nil, false},
		{map[string]string{"enforceQuota": "true"}, true},
		{map[string]string{"zookeeper.enforceQuota": "TRUE"}, true},
		{map[string]string{"zookeeper.enforceQuota": "yes"}, false},
		{map[string]string{"enforceQuota": "false"}, false},
	}
	for _, tc := range tests {
		cfg := conf.Default()
		cfg.Extra = tc.extra
		if got := enforceQuota(cfg); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.extra, got, tc.want)
		}
		if got := treeConfig(cfg, nil).EnforceQuota; got != tc.want {
			t.Errorf("%v: tree config %v, want %v", tc.extra, got, tc.want)
		}
	}
}
