package test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
	"github.com/zkserverd/zkserverd/session"
)

// Containers, TTL nodes, quotas, system nodes and multiRead end to end.
//
// The reaper runs on a reapClock whose ticks the test sends by hand, so no
// test waits for a check interval. Its Now is the wall clock on purpose:
// the replicated log stamps every transaction with the proposer's wall
// clock and Apply re-checks a TTL against that stamp, so TTL expiry is real
// time (1 ms TTLs, or a short wait for the wall clock to pass an expiry).

// reapClock is the reaper's clock: ticks only on tick, Now = wall clock.
type reapClock struct {
	ticks  chan time.Time
	period chan time.Duration
}

func newReapClock() *reapClock {
	return &reapClock{ticks: make(chan time.Time), period: make(chan time.Duration, 1)}
}

func (c *reapClock) Now() time.Time { return time.Now() }

func (c *reapClock) NewTicker(d time.Duration) session.Ticker {
	select {
	case c.period <- d:
	default:
	}
	return reapTicker{c.ticks}
}

type reapTicker struct{ c chan time.Time }

func (t reapTicker) C() <-chan time.Time { return t.c }
func (t reapTicker) Stop()               {}

// tick starts one reaper pass. The channel is unbuffered and the reaper
// takes the next tick only after its pass (including the apply of every
// delete it proposed) is over.
func (c *reapClock) tick(t *testing.T) {
	t.Helper()
	select {
	case c.ticks <- time.Now():
	case <-time.After(10 * time.Second):
		t.Fatal("the reaper did not take the tick")
	}
}

// settle runs a pass and waits until it is over (a second pass starts).
func (c *reapClock) settle(t *testing.T) {
	t.Helper()
	c.tick(t)
	c.tick(t)
}

// startReapServer runs an in-process server whose reaper uses clk.
func startReapServer(t *testing.T, cfg conf.Config, clk *reapClock) *server.Server {
	t.Helper()
	return servertest.Start(t, server.Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelInfo)}, server.WithReaperClock(clk))
}

func snCreate(t *testing.T, c *zk.Conn, path string, data []byte) {
	t.Helper()
	if _, err := c.Create(path, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

func snContainer(t *testing.T, c *zk.Conn, path string) {
	t.Helper()
	if _, err := c.CreateContainer(path, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("createContainer %s: %v", path, err)
	}
}

func snTTL(t *testing.T, c *zk.Conn, path string, ttl time.Duration) *zk.Stat {
	t.Helper()
	if _, err := c.CreateTTL(path, nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), ttl); err != nil {
		t.Fatalf("createTTL %s: %v", path, err)
	}
	_, st, err := c.Exists(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func snDelete(t *testing.T, c *zk.Conn, path string) {
	t.Helper()
	if err := c.Delete(path, -1); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
}

// snExpect checks which paths exist.
func snExpect(t *testing.T, c *zk.Conn, present, gone []string) {
	t.Helper()
	for _, p := range present {
		if ok, _, err := c.Exists(p); err != nil || !ok {
			t.Errorf("%s is gone (%v)", p, err)
		}
	}
	for _, p := range gone {
		if ok, _, err := c.Exists(p); err != nil || ok {
			t.Errorf("%s still exists (%v)", p, err)
		}
	}
}

// snWatchDelete sets an exists watch on path and returns a function that
// waits for its NodeDeleted event.
func snWatchDelete(t *testing.T, c *zk.Conn, path string) func() {
	t.Helper()
	ok, _, ch, err := c.ExistsW(path)
	if err != nil || !ok {
		t.Fatalf("watch %s: %v %v", path, ok, err)
	}
	return func() {
		t.Helper()
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted || ev.Path != path {
				t.Fatalf("event %+v, want NodeDeleted %s", ev, path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not deleted", path)
		}
	}
}

// waitWallPast waits until the wall clock is more than ttl after mtime, the
// condition Apply checks against the transaction's wall-clock stamp.
func waitWallPast(t *testing.T, mtime int64, ttl time.Duration) {
	t.Helper()
	deadline := time.UnixMilli(mtime + ttl.Milliseconds() + 1)
	if d := time.Until(deadline); d > 0 {
		<-time.After(d)
	}
}

func TestContainerReaping(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.ContainerCheckIntervalMs = 5000
	clk := newReapClock()
	srv := startReapServer(t, cfg, clk)
	if d := <-clk.period; d != 5*time.Second {
		t.Errorf("check interval %v, want znode.container.checkIntervalMs", d)
	}
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)
	snContainer(t, c, "/used")
	snCreate(t, c, "/used/child", nil)
	snDelete(t, c, "/used/child")
	snContainer(t, c, "/never")
	snContainer(t, c, "/busy")
	snCreate(t, c, "/busy/child", nil)
	deleted := snWatchDelete(t, c, "/used")
	_, before, _ := c.Exists("/")
	clk.settle(t)
	deleted()
	snExpect(t, c, []string{"/never", "/busy", "/busy/child"}, []string{"/used"})
	_, after, _ := c.Exists("/")
	if after.Pzxid <= before.Pzxid || after.Cversion != before.Cversion+1 {
		t.Errorf("root stat after reap %+v, before %+v", after, before)
	}
	clk.settle(t)
	snExpect(t, c, []string{"/never", "/busy"}, nil)
}

// TestCuratorContainerParents: Curator's creatingParentContainersIfNeeded
// makes every parent a container; once the leaf goes, the parents go one
// level per check, as with ZooKeeper.
func TestCuratorContainerParents(t *testing.T) {
	clk := newReapClock()
	srv := startReapServer(t, testConfig(t, t.TempDir()), clk)
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)
	snContainer(t, c, "/curator")
	snContainer(t, c, "/curator/locks")
	leaf, err := c.Create("/curator/locks/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	clk.settle(t)
	snExpect(t, c, []string{"/curator", "/curator/locks"}, nil)
	snDelete(t, c, leaf)
	locksGone := snWatchDelete(t, c, "/curator/locks")
	clk.tick(t)
	locksGone()
	snExpect(t, c, []string{"/curator"}, nil)
	rootGone := snWatchDelete(t, c, "/curator")
	clk.tick(t)
	rootGone()
}

func TestTTLReaping(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.ExtendedTypesEnabled = true
	clk := newReapClock()
	srv := startReapServer(t, cfg, clk)
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)

	plain := snTTL(t, c, "/plain", time.Millisecond)
	parent := snTTL(t, c, "/parent", time.Millisecond)
	snCreate(t, c, "/parent/child", nil)
	waitWallPast(t, max(plain.Mtime, parent.Mtime), time.Millisecond)
	gone := snWatchDelete(t, c, "/plain")
	clk.settle(t)
	gone()
	snExpect(t, c, []string{"/parent", "/parent/child"}, []string{"/plain"})

	// A setData restarts the ttl: /old goes, /modified (same age) stays.
	const ttl = 500 * time.Millisecond
	old := snTTL(t, c, "/old", ttl)
	snTTL(t, c, "/modified", ttl)
	waitWallPast(t, old.Mtime, ttl)
	st, err := c.Set("/modified", []byte("touch"), -1)
	if err != nil {
		t.Fatal(err)
	}
	oldGone := snWatchDelete(t, c, "/old")
	clk.settle(t)
	oldGone()
	snExpect(t, c, []string{"/modified"}, nil)
	waitWallPast(t, st.Mtime, ttl)
	modGone := snWatchDelete(t, c, "/modified")
	clk.tick(t)
	modGone()
}

// setQuota does what zkCli setquota does for path: the quota path's nodes,
// the limits node, then the stats node (whose data the server computes).
func setQuota(t *testing.T, c *zk.Conn, path, limits string) {
	t.Helper()
	p := "/zookeeper/quota"
	for _, part := range strings.Split(path[1:], "/") {
		p += "/" + part
		if ok, _, _ := c.Exists(p); !ok {
			snCreate(t, c, p, nil)
		}
	}
	snCreate(t, c, p+"/zookeeper_limits", []byte(limits))
	snCreate(t, c, p+"/zookeeper_stats", []byte("count=0,bytes=0"))
}

func quotaStats(t *testing.T, c *zk.Conn, path string) string {
	t.Helper()
	data, _, err := c.Get("/zookeeper/quota" + path + "/zookeeper_stats")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestQuotaEnforced(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Extra["zookeeper.enforceQuota"] = "true"
	srv := startServer(t, cfg)
	addr := srv.Addr().String()
	c, _ := testutil.Connect(t, addr, 10*time.Second)
	snCreate(t, c, "/app", []byte("abc"))
	snCreate(t, c, "/app/a", nil)
	// zkCli: setquota -N 3 /app, then setquota -B 10 /app.
	setQuota(t, c, "/app", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3")
	if got := quotaStats(t, c, "/app"); got != "count=2,bytes=3" {
		t.Fatalf("stats after setquota: %q", got)
	}
	if _, err := c.Set("/zookeeper/quota/app/zookeeper_limits",
		[]byte("count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=3"), -1); err != nil {
		t.Fatal(err)
	}
	snCreate(t, c, "/app/b", []byte("1234"))
	if _, err := c.Create("/app/c", nil, 0, zk.WorldACL(zk.PermAll)); err == nil || !strings.Contains(err.Error(), "-125") {
		t.Fatalf("fourth node: %v, want QuotaExceeded (-125)", err)
	}
	if _, err := c.Set("/app/b", []byte("12345678"), -1); err == nil || !strings.Contains(err.Error(), "-125") {
		t.Fatalf("setData over the byte limit: %v, want QuotaExceeded (-125)", err)
	}
	if got := quotaStats(t, c, "/app"); got != "count=3,bytes=7" {
		t.Errorf("stats: %q", got)
	}

	// The exact reply: header err -125, and the failed write consumed a zxid.
	raw := dialRaw(t, addr)
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 20000}); err != nil {
		t.Fatal(err)
	}
	h1, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/app/d", ACL: jute.OpenACLUnsafe})
	h2, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/app/d", ACL: jute.OpenACLUnsafe})
	if h1.Err != jute.QuotaExceeded || h2.Err != jute.QuotaExceeded || h2.Zxid != h1.Zxid+1 {
		t.Errorf("raw creates: %+v then %+v", h1, h2)
	}

	// Deleting frees room; delquota lifts the limit.
	snDelete(t, c, "/app/a")
	snCreate(t, c, "/app/c", nil)
	snDelete(t, c, "/zookeeper/quota/app/zookeeper_limits")
	snCreate(t, c, "/app/d", []byte("plenty of bytes"))
}

func TestQuotaNotEnforcedByDefault(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)
	snCreate(t, c, "/app", nil)
	setQuota(t, c, "/app", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=1")
	snCreate(t, c, "/app/a", []byte("xy"))
	snCreate(t, c, "/app/b", nil)
	if got := quotaStats(t, c, "/app"); got != "count=3,bytes=2" {
		t.Errorf("stats: %q", got)
	}
}

// TestSystemNodeWrites: /zookeeper/config is READ-only for everyone, and
// the system nodes cannot be deleted, as in ZooKeeper.
func TestSystemNodeWrites(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"setData /zookeeper/config", func() error { _, err := c.Set("/zookeeper/config", []byte("x"), -1); return err }, zk.ErrNoAuth},
		{"setACL /zookeeper/config", func() error {
			_, err := c.SetACL("/zookeeper/config", zk.WorldACL(zk.PermAll), -1)
			return err
		}, zk.ErrNoAuth},
		{"create under /zookeeper/config", func() error {
			_, err := c.Create("/zookeeper/config/x", nil, 0, zk.WorldACL(zk.PermAll))
			return err
		}, zk.ErrNoAuth},
		{"delete /zookeeper/config", func() error { return c.Delete("/zookeeper/config", -1) }, zk.ErrBadArguments},
		{"delete /zookeeper/quota", func() error { return c.Delete("/zookeeper/quota", -1) }, zk.ErrBadArguments},
		{"delete /zookeeper", func() error { return c.Delete("/zookeeper", -1) }, zk.ErrBadArguments},
		{"delete /", func() error { return c.Delete("/", -1) }, zk.ErrBadArguments},
		{"getData /zookeeper/config", func() error { _, _, err := c.Get("/zookeeper/config"); return err }, nil},
		{"setData /zookeeper", func() error { _, err := c.Set("/zookeeper", []byte("x"), -1); return err }, nil},
		{"create under /zookeeper/quota", func() error {
			_, err := c.Create("/zookeeper/quota/x", nil, 0, zk.WorldACL(zk.PermAll))
			return err
		}, nil},
	}
	for _, tc := range tests {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	acl, st, err := c.GetACL("/zookeeper/config")
	if err != nil || len(acl) != 1 || acl[0].Perms != zk.PermRead || st.Aversion != -1 || st.Version != 0 {
		t.Errorf("/zookeeper/config ACL %v stat %+v err %v", acl, st, err)
	}
}

// vectorFrames returns the C> and S< frames of raw_edge_cases.txt that
// follow the "# op:" line starting with op, in order.
func vectorFrames(t *testing.T, op string) (client, srv [][]byte) {
	t.Helper()
	f, err := os.Open("../jute/testdata/vectors/raw_edge_cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# op: ") {
			in = strings.HasPrefix(line[len("# op: "):], op)
			continue
		}
		prefix, hexText, ok := strings.Cut(line, " ")
		if !in || !ok || (prefix != "C>" && prefix != "S<") {
			continue
		}
		b, err := hex.DecodeString(hexText)
		if err != nil {
			t.Fatalf("bad hex in vector: %v", err)
		}
		if prefix == "C>" {
			client = append(client, b)
		} else {
			srv = append(srv, b)
		}
	}
	if len(client) == 0 || len(client) != len(srv) {
		t.Fatalf("vector op %q: %d client, %d server frames", op, len(client), len(srv))
	}
	return client, srv
}

// TestMultiReadVector replays the captured multiRead (getChildren,
// getData, getData of a missing node) and compares the reply with
// ZooKeeper's byte for byte, after copying in the run-specific zxids and
// times.
func TestMultiReadVector(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	raw := dialRaw(t, srv.Addr().String())
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 20000}); err != nil {
		t.Fatal(err)
	}
	if h, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/v", ACL: jute.OpenACLUnsafe}); h.Err != jute.OK {
		t.Fatalf("create /v: %v", h.Err)
	}
	creates, _ := vectorFrames(t, "create /v/raw")
	for _, frame := range creates {
		raw.c.Write(frame)
		if b, err := raw.readFrame(5 * time.Second); err != nil || len(b) < 16 {
			t.Fatalf("setup create reply: %x %v", b, err)
		}
	}
	reqs, replies := vectorFrames(t, "multiRead")
	raw.c.Write(reqs[0])
	got, err := raw.readFrame(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := replies[0][4:] // without the length prefix
	var gotH, wantH jute.ReplyHeader
	var gotR, wantR jute.MultiResponse
	gd, wd := jute.NewDecoder(got), jute.NewDecoder(want)
	gotH.Decode(gd)
	wantH.Decode(wd)
	gotR.Decode(gd)
	wantR.Decode(wd)
	if gd.Err() != nil || wd.Err() != nil || len(gotR.Results) != 3 || len(wantR.Results) != 3 {
		t.Fatalf("decode: %v %v; got %+v", gd.Err(), wd.Err(), gotR)
	}
	gs := &gotR.Results[1].Response.(*jute.GetDataResponse).Stat
	ws := &wantR.Results[1].Response.(*jute.GetDataResponse).Stat
	if gs.Pzxid != gs.Czxid+1 || ws.Pzxid != ws.Czxid+1 {
		t.Errorf("pzxid: got %+v, ZooKeeper %+v", gs, ws)
	}
	ws.Czxid, ws.Mzxid, ws.Pzxid, ws.Ctime, ws.Mtime = gs.Czxid, gs.Mzxid, gs.Pzxid, gs.Ctime, gs.Mtime
	wantH.Zxid = gotH.Zxid
	norm := jute.AppendFrame(nil, &wantH, &wantR)[4:]
	if !bytes.Equal(got, norm) {
		t.Errorf("multiRead reply\n got  %x\n want %x", got, norm)
	}
}
