package test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// Debian's Apache ZooKeeper 3.8 (package zookeeper), as the compat suite
// runs it (test/compat/runner/server.go).
const (
	debianZooKeeperJar = "/usr/share/java/zookeeper.jar"
	debianSlf4jSimple  = "/usr/share/java/slf4j-simple.jar"
	debianNettyJars    = "/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"
)

// TestZooKeeperLoadsBackup writes a backup of a zkserverd server in
// ZooKeeper's snapshot format into a data directory as version-2/
// snapshot.<zxid>, starts Apache ZooKeeper 3.8 on it, and reads every
// znode and stat back through a client: they are zkserverd's, and
// ZooKeeper's last zxid is the backup's. It is skipped only when Java or
// Debian's ZooKeeper jar is not installed (make compat installs them).
func TestZooKeeperLoadsBackup(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not installed: apt-get install zookeeper (make compat does)")
	}
	if _, err := os.Stat(debianZooKeeperJar); err != nil {
		t.Skipf("%s not installed: apt-get install zookeeper (make compat does)", debianZooKeeperJar)
	}

	cfg := testConfig(t, t.TempDir())
	cfg.TickTime = 2000 // sessions of 30 s, so ephemerals outlive ZooKeeper's start
	cfg.ExtendedTypesEnabled = true
	backupTweak(&cfg)
	o := ops.New(ops.Options{})
	srv := servertest.Start(t, server.Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelInfo), Operator: o})
	c, _ := testutil.Connect(t, srv.Addr().String(), 30*time.Second)
	populateVaried(t, c)
	want := clientView(t, srv.Addr().String())

	req, err := http.NewRequest(http.MethodGet, "http://"+o.AdminAddr().String()+"/commands/snapshot?format=zookeeper", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", backupAuth)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("snapshot: %d %v", resp.StatusCode, err)
	}
	zxid := resp.Header.Get("last_zxid")
	name := strings.Trim(strings.TrimPrefix(resp.Header.Get("Content-Disposition"), "attachment; filename="), `"`)
	if name != "snapshot."+strings.TrimPrefix(zxid, "0x") {
		t.Fatalf("backup offered as %q, last_zxid %s", name, zxid)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "version-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version-2", name), body, 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	zooCfg := filepath.Join(dir, "zoo.cfg")
	writeFile(t, zooCfg, fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nextendedTypesEnabled=true\n", dir, port))
	cp := debianZooKeeperJar + ":" + debianNettyJars
	if _, err := os.Stat(debianSlf4jSimple); err == nil {
		cp += ":" + debianSlf4jSimple
	}
	log, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(java, "-Xmx256m", "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", zooCfg)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ok := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, _ := testutil.FourLetter(addr, "srvr"); strings.Contains(out, "Mode: ") {
			ok = true
			break
		}
	}
	if !ok {
		b, _ := os.ReadFile(log.Name())
		t.Fatalf("ZooKeeper did not start on the backup within 60 s:\n%s", b)
	}
	if srvr, _ := testutil.FourLetter(addr, "srvr"); !strings.Contains(srvr, "Zxid: "+zxid+"\n") {
		t.Errorf("ZooKeeper's srvr does not report the backup's zxid %s:\n%s", zxid, srvr)
	}
	got := clientView(t, addr)
	if got != want {
		b, _ := os.ReadFile(log.Name())
		t.Fatalf("ZooKeeper shows another tree than zkserverd:\n%s\nZooKeeper's log:\n%s", firstDiff(got, want), b)
	}
	c.Close()
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// populateVaried writes znodes of every kind a backup must carry: nested
// and empty nodes, binary data, an ACL of its own, sequential, ephemeral,
// container and TTL nodes, and nodes with changed data, ACL and children.
func populateVaried(t *testing.T, c *zk.Conn) {
	t.Helper()
	open := zk.WorldACL(zk.PermAll)
	steps := []func() error{
		func() error { _, err := c.Create("/app", []byte("app"), 0, open); return err },
		func() error { _, err := c.Create("/app/cfg", []byte{0, 1, 2, 255}, 0, open); return err },
		func() error { _, err := c.Create("/app/empty", nil, 0, open); return err },
		func() error {
			_, err := c.Create("/app/secret", []byte("s"), 0, zk.DigestACL(zk.PermRead|zk.PermAdmin, "u", "p"))
			return err
		},
		func() error { _, err := c.Create("/app/q-", []byte("1"), zk.FlagSequence, open); return err },
		func() error { _, err := c.Create("/app/q-", []byte("2"), zk.FlagSequence, open); return err },
		func() error { _, err := c.Create("/app/eph", nil, zk.FlagEphemeral, open); return err },
		func() error { _, err := c.CreateContainer("/app/box", nil, zk.FlagContainer, open); return err },
		func() error { _, err := c.Create("/app/box/item", nil, 0, open); return err },
		func() error { _, err := c.CreateTTL("/app/ttl", nil, zk.FlagTTL, open, time.Hour); return err },
		func() error { _, err := c.Set("/app/cfg", []byte("v2"), -1); return err },
		func() error { _, err := c.Set("/app/cfg", []byte("v3"), -1); return err },
		func() error { _, err := c.SetACL("/app/empty", zk.WorldACL(zk.PermRead), -1); return err },
		func() error { _, err := c.Create("/app/gone", nil, 0, open); return err },
		func() error { return c.Delete("/app/gone", -1) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("populate step %d: %v", i, err)
		}
	}
}
