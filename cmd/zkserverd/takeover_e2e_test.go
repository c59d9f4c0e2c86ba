package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkproc"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/test/ports"
)

// runAsZkserverdEnv makes the test binary run as zkserverd (TestMain), so
// that the end-to-end test starts mirrors as processes of their own
// without building the command.
const runAsZkserverdEnv = "ZKSERVERD_TEST_RUN_AS_ZKSERVERD"

func TestMain(m *testing.M) {
	if os.Getenv(runAsZkserverdEnv) == "1" {
		root := newRootCommand(os.Stdout, os.Stderr)
		root.SetArgs(os.Args[1:])
		if err := root.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mirrorProc is a `zkserverd mirror` process of the test.
type mirrorProc struct {
	id        int64
	status    string // status address
	client    string // the takeover member's client address
	cfg       string // --takeover-config
	serve     bool   // --client-addr client: the mirror serves clients there before the switch
	cmd       *exec.Cmd
	log       string
	exited    chan struct{}
	exitError error
}

// startMirrorProc runs `zkserverd mirror` for observer id.
func startMirrorProc(t *testing.T, m *mirrorProc, ensembleCfg string) {
	t.Helper()
	args := []string{"mirror", "--ensemble", ensembleCfg, "--myid", strconv.FormatInt(m.id, 10),
		"--status-addr", m.status, "--takeover-config", m.cfg}
	if m.serve {
		args = append(args, "--client-addr", m.client)
	}
	startZkserverdProc(t, m, args...)
}

// startZkserverdProc runs `zkserverd args...` as m's process; cleanup
// stops it with SIGTERM and expects a clean exit.
func startZkserverdProc(t *testing.T, m *mirrorProc, args ...string) {
	t.Helper()
	m.cmd = exec.Command(os.Args[0], args...)
	m.cmd.Env = append(os.Environ(), runAsZkserverdEnv+"=1")
	logf, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.exited = make(chan struct{})
	go func() { m.exitError = m.cmd.Wait(); logf.Close(); close(m.exited) }()
	t.Cleanup(func() {
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
			if m.exitError != nil { // a race the detector found exits 66
				t.Errorf("mirror %d exited with %v on SIGTERM", m.id, m.exitError)
			}
		case <-time.After(20 * time.Second):
			m.cmd.Process.Kill()
			<-m.exited
			t.Errorf("mirror %d did not stop within 20 s of SIGTERM", m.id)
		}
		if t.Failed() {
			b, _ := os.ReadFile(m.log)
			log := string(b)
			if i := strings.Index(log, "WARNING: DATA RACE"); i >= 0 {
				log = log[i:] // the race detector's report, in full
			}
			t.Logf("mirror %d log:\n%s", m.id, lastLines(log, 150))
		}
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stateRecorder records a go-zookeeper client's session states.
type stateRecorder struct {
	mu     sync.Mutex
	states []zk.State
}

func (r *stateRecorder) watch(events <-chan zk.Event) {
	for ev := range events {
		if ev.Type == zk.EventSession {
			r.mu.Lock()
			r.states = append(r.states, ev.State)
			r.mu.Unlock()
		}
	}
}

func (r *stateRecorder) seen() []zk.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states)
}

// TestTakeoverFromZooKeeper runs Debian's ZooKeeper as 3 voters and
// three `zkserverd mirror` processes as its observers 4, 5 and 6, each
// with a takeover configuration (member 4 on ZooKeeper voter 1's old
// client port; members 5 and 6 on the client addresses where mirrors 5
// and 6 serve clients before the switch). Clients of ZooKeeper and of
// the mirrors create ephemeral and persistent nodes. A takeover while the voters run is refused and leaves the
// mirrors mirroring; then `zkserverd takeover` runs while the voters are
// stopped, and the mirrors become a zkserverd ensemble: a client whose
// connect string names ZooKeeper voter 1, and one whose connect string
// names the mirrors, resume their sessions (no Expired) with their
// ephemerals, a session opened on ZooKeeper resumes on
// another member with ZooKeeper's password, a session whose client never
// comes back expires, the data is there and new zxids follow ZooKeeper's.
// Afterwards a member leaves its mirror process for a plain `zkserverd
// --config` on the same data directory.
func TestTakeoverFromZooKeeper(t *testing.T) {
	zkproc.Require(t)
	picker := ports.ForCmd()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := zkproc.Launch(ctx, zkproc.Spec{Dir: t.TempDir(), Voters: []int64{1, 2, 3}, Outside: []int64{4, 5, 6}, Ports: zkprocPorts{picker}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	dir := t.TempDir()
	ensembleCfg := writeEnsembleConfig(t, dir, e.ServerLines())

	// The takeover configuration: members 4, 5 and 6 on zkserverd ports
	// of their own; member 4 serves clients on ZooKeeper 1's client port.
	mirrors := []*mirrorProc{{id: 4}, {id: 5, serve: true}, {id: 6, serve: true}}
	var lines strings.Builder
	for _, m := range mirrors {
		fmt.Fprintf(&lines, "server.%d=127.0.0.1:%d:%d\n", m.id, picker.Free(t), picker.Free(t))
	}
	for _, m := range mirrors {
		port := picker.Free(t)
		if m.id == 4 {
			port = e.Member(1).ClientPort
		}
		m.client = "127.0.0.1:" + strconv.Itoa(port)
		m.status = "127.0.0.1:" + strconv.Itoa(picker.Free(t))
		m.cfg = filepath.Join(dir, fmt.Sprintf("takeover%d.cfg", m.id))
		m.log = filepath.Join(dir, fmt.Sprintf("mirror%d.log", m.id))
		// Member 5 names mirror 5's client address exactly, and takes its
		// port over at the switch; member 6 names every interface, and
		// listens anew once mirror 6 closes its port.
		clientAddr := ""
		if m.id == 5 {
			clientAddr = "clientPortAddress=127.0.0.1\n"
		}
		text := fmt.Sprintf("tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=%s\n%sclientPort=%d\nadmin.enableServer=false\n%s",
			filepath.Join(dir, fmt.Sprintf("member%d", m.id)), clientAddr, port, lines.String())
		if err := os.WriteFile(m.cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		startMirrorProc(t, m, ensembleCfg)
	}

	// ZooKeeper's clients: c1 names only voter 1 (whose port member 4
	// takes over), a raw session on voter 2, c3 (which never comes back)
	// only voter 3.
	var rec1 stateRecorder
	c1, ev1, err := zk.Connect([]string{e.Member(1).ClientAddr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	go rec1.watch(ev1)
	c3, _, err := zk.Connect([]string{e.Member(3).ClientAddr()}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	raw, err := connectRaw(e.Member(2).ClientAddr(), 0, nil, 10000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.close()
	if raw.id == 0 || !bytes.Equal(raw.passwd, session.Password(raw.id)) {
		t.Fatalf("ZooKeeper's session %#x has password %x, session.Password derives %x", raw.id, raw.passwd, session.Password(raw.id))
	}
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c1.Create("/eph1", []byte("c1"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c3.Create("/eph3", []byte("c3"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	// c2 is a client of the serving mirrors 5 and 6 (their client
	// addresses are the members' after the switch).
	testutil.Eventually(t, 60*time.Second, "every mirror is synced", func() bool {
		for _, m := range mirrors {
			if !getMirrorStatus(t, m.status).Synced {
				return false
			}
		}
		return true
	})
	var rec2 stateRecorder
	c2, ev2, err := zk.Connect([]string{mirrors[1].client, mirrors[2].client}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go rec2.watch(ev2)
	if _, err := c2.Create("/eph2", []byte("c2"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Create("/through-mirror", []byte("m"), 0, acl); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := c1.Create(fmt.Sprintf("/data%d", i), []byte(strconv.Itoa(i)), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c1.Create("/last", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, st, err := c1.Exists("/last")
	if err != nil || st == nil {
		t.Fatal(err)
	}
	zkLast := st.Czxid
	testutil.Eventually(t, 60*time.Second, "every mirror reaches ZooKeeper's last zxid", func() bool {
		for _, m := range mirrors {
			if s := getMirrorStatus(t, m.status); !s.Synced || s.LastZxid != zxidHex(zkLast) || s.Phase != phaseMirroring {
				return false
			}
		}
		return true
	})

	// While the voters run, the takeover is refused and the mirrors go on.
	var args []string
	for _, m := range mirrors {
		args = append(args, "--mirror", "http://"+m.status)
	}
	out := &syncBuffer{}
	if err := runTakeoverCmd(ctx, out, append(args, "--timeout", "2s")...); err == nil || !strings.Contains(err.Error(), "still reachable") {
		t.Fatalf("takeover while ZooKeeper runs: %v, want a refusal; output:\n%s", err, out.String())
	}
	for _, m := range mirrors {
		if s := getMirrorStatus(t, m.status); s.Phase != phaseMirroring || !s.Synced || !s.ZooKeeperReachable {
			t.Fatalf("mirror %d after the refused takeover: %+v, want mirroring, synced, ZooKeeper reachable", m.id, s)
		}
	}
	if _, err := c1.Create("/still", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, st, _ = c1.Exists("/still")
	zkLast = st.Czxid
	testutil.Eventually(t, 30*time.Second, "the mirrors follow a write after the refusal", func() bool {
		for _, m := range mirrors {
			if s := getMirrorStatus(t, m.status); s.LastZxid != zxidHex(zkLast) {
				return false
			}
		}
		return true
	})

	// The takeover: frozen mirrors, the voters stopped (followers first).
	out = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- runTakeoverCmd(ctx, out, append(args, "--timeout", "60s")...) }()
	testutil.Eventually(t, 30*time.Second, "every mirror is frozen", func() bool {
		for _, m := range mirrors {
			if getMirrorStatus(t, m.status).Phase != phaseFrozen {
				return false
			}
		}
		return true
	})
	// A client that connects to frozen mirror 5 waits, and is served by
	// member 5 after the switch (the port is handed over, not closed).
	type rawResult struct {
		s   *rawSession
		err error
	}
	waited := make(chan rawResult, 1)
	go func() {
		s, err := connectRaw(mirrors[1].client, 0, nil, 10000, 0)
		waited <- rawResult{s, err}
	}()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2, 3} {
		if id != leader {
			if err := e.Stop(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.Stop(leader); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("takeover: %v; output:\n%s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("takeover did not finish within 90 s; output:\n%s", out.String())
	}
	t.Logf("takeover output:\n%s", out.String())
	select {
	case r := <-waited:
		if r.err != nil || r.s.id == 0 {
			t.Fatalf("a client that connected to frozen mirror 5: %+v %v, want a session from member 5", r.s, r.err)
		}
		r.s.close()
	case <-time.After(15 * time.Second):
		t.Fatal("a client that connected to frozen mirror 5 got no answer")
	}

	// c1 resumes through voter 1's old address, now member 4's.
	sid := c1.SessionID()
	testutil.Eventually(t, 30*time.Second, "c1 has its session again", func() bool {
		s := rec1.seen()
		return len(s) > 0 && s[len(s)-1] == zk.StateHasSession && slices.Contains(s, zk.StateDisconnected)
	})
	if slices.Contains(rec1.seen(), zk.StateExpired) || c1.SessionID() != sid {
		t.Fatalf("c1's states %v, session %#x (was %#x): want Disconnected then HasSession, never Expired", rec1.seen(), c1.SessionID(), sid)
	}
	// c2 resumes on member 5 or 6, at the mirrors' client addresses.
	sid2 := c2.SessionID()
	testutil.Eventually(t, 30*time.Second, "c2 has its session again", func() bool {
		s := rec2.seen()
		return len(s) > 0 && s[len(s)-1] == zk.StateHasSession && slices.Contains(s, zk.StateDisconnected)
	})
	if slices.Contains(rec2.seen(), zk.StateExpired) || c2.SessionID() != sid2 {
		t.Fatalf("c2's states %v, session %#x (was %#x): want Disconnected then HasSession, never Expired", rec2.seen(), c2.SessionID(), sid2)
	}
	if data, st, err := c2.Get("/eph2"); err != nil || string(data) != "c2" || st.EphemeralOwner != sid2 {
		t.Fatalf("c2's ephemeral after the takeover: %q %+v %v", data, st, err)
	}
	if data, _, err := c2.Get("/through-mirror"); err != nil || string(data) != "m" {
		t.Fatalf("/through-mirror after the takeover: %q %v", data, err)
	}
	data, st, err := c1.Get("/eph1")
	if err != nil || string(data) != "c1" || st.EphemeralOwner != sid {
		t.Fatalf("c1's ephemeral after the takeover: %q %+v %v", data, st, err)
	}
	for i := range 10 {
		if data, _, err := c1.Get(fmt.Sprintf("/data%d", i)); err != nil || string(data) != strconv.Itoa(i) {
			t.Fatalf("/data%d after the takeover: %q %v", i, data, err)
		}
	}
	if _, err := c1.Create("/after", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, st, err = c1.Exists("/after")
	if err != nil || uint64(st.Czxid) <= uint64(zkLast) {
		t.Fatalf("a write after the takeover: %+v %v, want a zxid above ZooKeeper's last %#x", st, err, zkLast)
	}

	// The raw session resumes on member 5 with ZooKeeper's password.
	raw.close()
	again, err := connectRaw(mirrors[1].client, raw.id, raw.passwd, 10000, zkLast)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if again.id != raw.id || again.timeout <= 0 {
		t.Fatalf("session %#x resumed on member 5 as %#x (timeout %d): want it kept", raw.id, again.id, again.timeout)
	}

	// c3 never comes back (its only address is voter 3's): it expires.
	testutil.Eventually(t, 30*time.Second, "c3's session expires and its ephemeral goes", func() bool {
		ok, _, err := c1.Exists("/eph3")
		return err == nil && !ok
	})
	for _, m := range mirrors {
		resp, err := http.Get("http://" + m.status + "/ready")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if s := getMirrorStatus(t, m.status); resp.StatusCode != http.StatusOK || s.Phase != phaseServing || s.Mode == "" {
			t.Errorf("member %d: /ready %d, status %+v", m.id, resp.StatusCode, s)
		}
	}

	// Afterwards: member 6 leaves its mirror process for an ordinary
	// `zkserverd --config` on the same data directory, and serves the data.
	m6 := mirrors[2]
	m6.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m6.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("mirror 6 did not stop within 20 s of SIGTERM")
	}
	if m6.exitError != nil {
		t.Fatalf("mirror 6 exited with %v", m6.exitError)
	}
	server6 := &mirrorProc{id: 6, client: m6.client, log: m6.log + ".server"}
	startZkserverdProc(t, server6, "--config", m6.cfg)
	testutil.Eventually(t, 30*time.Second, "member 6 serves as a plain server", func() bool {
		mode := testutil.FourLetterLine(m6.client, "srvr", "Mode: ")
		return mode == "follower" || mode == "leader"
	})
	c6, _, err := zk.Connect([]string{m6.client}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c6.Close()
	if data, _, err := c6.Get("/data9"); err != nil || string(data) != "9" {
		t.Errorf("/data9 on the restarted member 6: %q %v", data, err)
	}
}

// writeEnsembleConfig writes the ZooKeeper ensemble's server lines as a
// zoo.cfg for the mirrors.
func writeEnsembleConfig(t *testing.T, dir string, serverLines map[int64]string) string {
	t.Helper()
	var cfg strings.Builder
	for id, line := range serverLines {
		fmt.Fprintf(&cfg, "server.%d=%s\n", id, line)
	}
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runTakeoverCmd runs `zkserverd takeover args...` in this process.
func runTakeoverCmd(ctx context.Context, out io.Writer, args ...string) error {
	root := newRootCommand(out, out)
	root.SetArgs(append([]string{"takeover"}, args...))
	return root.ExecuteContext(ctx)
}
