package mirror

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/procgroup"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/test/ports"
)

var record = flag.Bool("record", false, "TestAgainstZooKeeper writes its data directory and live read to testdata/zk38")

// Debian's ZooKeeper 3.8 and what its server needs on top of the
// dependencies zookeeper.jar's manifest names (as test/compat/runner runs
// it).
const (
	zookeeperJar = "/usr/share/java/zookeeper.jar"
	zkClasspath  = zookeeperJar + ":/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar:/usr/share/java/slf4j-simple.jar"
)

// needZooKeeper skips the test when ZooKeeper or Java is missing, and
// fails it instead when ZKSERVERD_REQUIRE_ZOOKEEPER=1.
func needZooKeeper(t *testing.T) {
	t.Helper()
	missing := ""
	if _, err := os.Stat(zookeeperJar); err != nil {
		missing = zookeeperJar
	} else if _, err := exec.LookPath("java"); err != nil {
		missing = "java"
	}
	if missing == "" {
		return
	}
	if os.Getenv("ZKSERVERD_REQUIRE_ZOOKEEPER") == "1" {
		t.Fatalf("ZKSERVERD_REQUIRE_ZOOKEEPER=1 but %s is missing", missing)
	}
	t.Skipf("%s is missing (install Debian's zookeeper package)", missing)
}

// zkServer is a standalone Apache ZooKeeper in a process group of its own.
type zkServer struct {
	addr, dataDir, log string
	proc               *procgroup.Process
}

// startZooKeeper starts ZooKeeper on a loopback port with TTL nodes on,
// short session timeouts allowed, a snapshot every few dozen txns and a
// fast container reaper, and waits until it answers ruok.
func startZooKeeper(t *testing.T) *zkServer {
	t.Helper()
	home := t.TempDir()
	port := ports.ForMirror().Free(t)
	s := &zkServer{addr: fmt.Sprintf("127.0.0.1:%d", port), dataDir: filepath.Join(home, "data"),
		log: filepath.Join(home, "zookeeper.log")}
	cfg := strings.Join([]string{"tickTime=250", "minSessionTimeout=1000", "maxSessionTimeout=60000",
		"dataDir=" + s.dataDir, fmt.Sprintf("clientPort=%d", port), "clientPortAddress=127.0.0.1",
		"extendedTypesEnabled=true", "admin.enableServer=false", "4lw.commands.whitelist=ruok", ""}, "\n")
	cfgPath := filepath.Join(home, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"java", "-Xmx256m", "-Dzookeeper.snapCount=40", "-Dzookeeper.preAllocSize=4",
		"-Dznode.container.checkIntervalMs=100", "-cp", zkClasspath,
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath}
	var err error
	if s.proc, err = procgroup.Start(argv, procgroup.Options{Log: s.log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("ZooKeeper's log:\n%s", tail(string(b), 40))
		}
	})
	s.waitReady(t)
	return s
}

// kill ends ZooKeeper with SIGKILL (its log is synced before each reply)
// and waits until it is gone.
func (s *zkServer) kill() { s.proc.Kill() }

func (s *zkServer) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ruok(s.addr) {
			return
		}
		select {
		case <-s.proc.Done():
			t.Fatal("ZooKeeper exited while starting")
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("ZooKeeper did not answer ruok within 60s")
}

func ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	b := make([]byte, 4)
	n, _ := c.Read(b)
	return string(b[:n]) == "imok"
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// quietLogger drops go-zookeeper's log lines (its reconnect attempts
// outlive the test's logger).
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// connect opens a session, through dial unless it is nil, waiting at
// most 30s for it.
func connect(t *testing.T, addr string, timeout time.Duration, dial zk.Dialer) *zk.Conn {
	t.Helper()
	if dial == nil {
		dial = net.DialTimeout
	}
	c, events, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(quietLogger{}), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-events:
			if e.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no session with %s within 30s", addr)
		}
	}
}

// waitGone polls until path no longer exists, for at most 30s.
func waitGone(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ok, _, err := c.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
	}
	t.Fatalf("%s still there after 30s", p)
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestAgainstZooKeeper runs a workload with every kind of transaction on
// a real ZooKeeper 3.8, reads every znode back through a client, kills
// ZooKeeper, then feeds the mirror the first snapshot and every logged
// transaction after it (checkDataDir): each must apply, digests included,
// and the result must equal both ZooKeeper's own restore of the data
// directory and the live read. Then it starts again from each snapshot,
// as a sync phase.
func TestAgainstZooKeeper(t *testing.T) {
	needZooKeeper(t)
	srv := startZooKeeper(t)
	live := runWorkload(t, srv.addr)
	srv.kill()
	dir := filepath.Join(srv.dataDir, "version-2")
	stats := checkDataDir(t, dir, live)
	for _, k := range allKinds {
		if stats.types[k] == 0 {
			t.Errorf("the workload made no %s transaction", k)
		}
	}
	if stats.digests == 0 {
		t.Error("no transaction carried a digest")
	}
	// Every snapshot ZooKeeper wrote, fuzzy or not, as a SNAP would
	// bring it, two transactions before it resent.
	for _, snap := range zkFiles(t, dir, "snapshot") {
		t.Run("sync from "+filepath.Base(snap), func(t *testing.T) {
			syncFrom(t, dir, snap, 2, 0, live)
		})
	}
	if *record && !t.Failed() {
		saveRecording(t, dir, live)
	}
}

// allKinds are the transaction kinds the workload makes.
var allKinds = []string{"create", "setData", "setACL", "delete", "multi", "multi-failed", "error",
	"createSession", "closeSession", "createContainer", "createTTL", "deleteContainer"}

// runWorkload makes every kind of transaction and returns every znode as
// a client then reads it. Sessions a and b stay open.
func runWorkload(t *testing.T, addr string) []liveNode {
	open := zk.WorldACL(zk.PermAll)
	str := must[string](t)
	stat := must[*zk.Stat](t)
	a := connect(t, addr, 30*time.Second, nil)
	b := connect(t, addr, 20*time.Second, nil)
	if err := a.AddAuth("digest", []byte("alice:secret")); err != nil { // reads /secure's ACL unmasked
		t.Fatal(err)
	}
	str(a.Create("/app", []byte("hello"), 0, open))
	str(a.Create("/app/config", []byte("v0"), 0, open))
	for i := 1; i <= 3; i++ {
		stat(a.Set("/app/config", []byte(fmt.Sprintf("v%d", i)), -1))
	}
	stat(a.SetACL("/app/config", zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin), -1))
	for i := range 3 {
		str(a.Create("/app/seq-", []byte{byte(i)}, zk.FlagSequence, open))
	}
	if err := a.Delete("/app/seq-0000000003", -1); err != nil {
		t.Fatal(err)
	}
	str(a.Create("/app/null", nil, 0, open))
	str(a.Create("/app/big", make([]byte, 4<<10), 0, open))
	str(a.Create("/secure", []byte("s"), 0, append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.WorldACL(zk.PermRead)...)))
	// Requests that fail still take a zxid (ErrorTxn).
	if _, err := a.Create("/app", nil, 0, open); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, err := a.Set("/app/config", nil, 99); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("setData with a bad version: %v", err)
	}
	str(a.Create("/multi", nil, 0, open))
	if _, err := a.Multi(
		&zk.CreateRequest{Path: "/multi/a", Data: []byte("a"), Acl: open},
		&zk.CreateRequest{Path: "/multi/s-", Data: []byte("s"), Acl: open, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: "/app", Data: []byte("hello2"), Version: 0},
		&zk.DeleteRequest{Path: "/app/seq-0000000001", Version: -1},
		&zk.CheckVersionRequest{Path: "/app/config", Version: 3},
	); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Multi(
		&zk.CreateRequest{Path: "/multi/never", Data: []byte("n"), Acl: open},
		&zk.CheckVersionRequest{Path: "/app", Version: 99},
		&zk.SetDataRequest{Path: "/app", Data: []byte("never"), Version: -1},
	); err == nil {
		t.Fatal("a failing multi succeeded")
	}
	str(b.Create("/app/eph", []byte("e"), zk.FlagEphemeral, open))
	str(b.Create("/app/eseq-", []byte("e"), zk.FlagEphemeral|zk.FlagSequence, open))
	closedSession(t, addr, open)
	expiredSession(t, addr, a, open)
	reaped(t, a, open)
	str(a.Create("/zookeeper/quota/bulk", nil, 0, open))
	str(a.Create("/zookeeper/quota/bulk/zookeeper_limits", []byte("count=1000,bytes=-1"), 0, open))
	bulk(t, a, open)
	str(a.Create("/last", []byte("end"), 0, open))
	return testutil.ReadTree(t, a)
}

// closedSession: a session that closes (closeSession with its ephemerals).
func closedSession(t *testing.T, addr string, open []zk.ACL) {
	c := connect(t, addr, 10*time.Second, nil)
	must[string](t)(c.Create("/app/gone", []byte("g"), zk.FlagEphemeral, open))
	must[string](t)(c.Create("/app/gone-too", nil, zk.FlagEphemeral, open))
	c.Close()
}

// expiredSession: a session whose connection is cut and never comes
// back, so that ZooKeeper expires it (closeSession from the leader).
func expiredSession(t *testing.T, addr string, a *zk.Conn, open []zk.ACL) {
	var mu sync.Mutex
	var conns []net.Conn
	cut := false
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if cut {
			return nil, errors.New("cut")
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	d := connect(t, addr, time.Second, dial)
	must[string](t)(d.Create("/app/doomed", []byte("d"), zk.FlagEphemeral, open))
	mu.Lock()
	cut = true
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	waitGone(t, a, "/app/doomed")
}

// reaped: a container whose child went (deleteContainer) and a TTL node
// that expired; a container never used and a long TTL node stay.
func reaped(t *testing.T, a *zk.Conn, open []zk.ACL) {
	str := must[string](t)
	str(a.CreateContainer("/ctr", []byte("c"), zk.FlagContainer, open))
	str(a.Create("/ctr/x", nil, 0, open))
	if err := a.Delete("/ctr/x", -1); err != nil {
		t.Fatal(err)
	}
	str(a.CreateContainer("/ctr-unused", nil, zk.FlagContainer, open))
	str(a.CreateTTL("/ttl-short", []byte("t"), zk.FlagTTL, open, 300*time.Millisecond))
	str(a.CreateTTL("/ttl-long", []byte("t"), zk.FlagTTL, open, time.Hour))
	waitGone(t, a, "/ctr")
	waitGone(t, a, "/ttl-short")
}

// bulk writes enough to roll several snapshots and logs.
func bulk(t *testing.T, a *zk.Conn, open []zk.ACL) {
	must[string](t)(a.Create("/bulk", nil, 0, open))
	for i := range 60 {
		p := fmt.Sprintf("/bulk/n%02d", i)
		must[string](t)(a.Create(p, []byte(p), 0, open))
		if i%3 == 0 {
			must[*zk.Stat](t)(a.Set(p, []byte(p+"!"), 0))
		}
		if i%7 == 0 {
			if err := a.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// saveRecording replaces testdata/zk38 with dir's files and the live read.
func saveRecording(t *testing.T, dir string, live []liveNode) {
	dst := filepath.Join("testdata", "zk38", "version-2")
	if err := os.RemoveAll(filepath.Dir(dst)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.MarshalIndent(live, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "zk38", "live.json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d files and %d nodes in testdata/zk38", len(entries), len(live))
}
