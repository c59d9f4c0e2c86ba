package test

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// TestKill9KeepsAcknowledgedWrites writes concurrently to the real binary,
// kills it with SIGKILL while writes are in flight, restarts it on the same
// data directory, and checks that every acknowledged write is there and that
// a session still within its timeout resumes with its ephemeral.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; run without -short")
	}
	for _, store := range []string{"boltdb", "wal"} {
		t.Run(store, func(t *testing.T) { kill9KeepsAcknowledgedWrites(t, "logStore="+store) })
	}
}

func kill9KeepsAcknowledgedWrites(t *testing.T, extraConfig string) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port, extraConfig)

	raw := dialRaw(t, p.addr)
	sess, err := raw.handshake(jute.ConnectRequest{TimeOut: 4000})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/held", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}); h.Err != jute.OK {
		t.Fatalf("create ephemeral: %v", h.Err)
	}

	c, _ := testutil.Connect(t, p.addr, 4*time.Second)
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := fmt.Sprintf("/w%d-%d", w, i)
				if _, err := c.Create(path, []byte(path), 0, zk.WorldACL(zk.PermAll)); err != nil {
					return
				}
				mu.Lock()
				acked[path] = true
				mu.Unlock()
			}
		}(w)
	}
	testutil.Eventually(t, 20*time.Second, "some writes acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	close(stop)
	c.Close() // fails the requests still waiting for the dead server
	wg.Wait()

	p2 := startProcess(t, dir, port, extraConfig)
	c2, _ := testutil.Connect(t, p2.addr, 4*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for path := range acked {
		data, _, err := c2.Get(path)
		if err != nil || string(data) != path {
			t.Fatalf("acknowledged write %s lost after kill -9: %q %v (of %d acknowledged)", path, data, err, len(acked))
		}
	}
	t.Logf("%d acknowledged writes survived kill -9", len(acked))

	again := dialRaw(t, p2.addr)
	r, err := again.handshake(jute.ConnectRequest{SessionID: sess.SessionID, Passwd: sess.Passwd, TimeOut: 4000, LastZxidSeen: 1})
	if err != nil || r.SessionID != sess.SessionID {
		t.Fatalf("session did not resume after restart: %+v %v", r, err)
	}
	h, _ := again.call(jute.OpExists, &jute.PathWatchRequest{Path: "/held"})
	if h.Err != jute.OK {
		t.Fatalf("ephemeral of the resumed session: %v", h.Err)
	}
}

// TestSIGTERMShutsDownCleanly checks the process exits 0 on SIGTERM and the
// data is there after a restart.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; run without -short")
	}
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	c, _ := testutil.Connect(t, p.addr, 4*time.Second)
	if _, err := c.Create("/kept", []byte("yes"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("server did not exit within 15s of SIGTERM")
	}
	p2 := startProcess(t, dir, port)
	c2, _ := testutil.Connect(t, p2.addr, 4*time.Second)
	if data, _, err := c2.Get("/kept"); err != nil || string(data) != "yes" {
		t.Fatalf("after restart: %q %v", data, err)
	}
}
