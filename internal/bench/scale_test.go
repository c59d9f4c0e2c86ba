package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

func TestScaleScenariosAgainstInProcessServer(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	flat := shortConfig(addr, ScenarioZnodes)
	flat.Flat, flat.RunID, flat.Cleanup = true, "flat", true
	res, err := Run(ctx, flat)
	if err != nil {
		t.Fatalf("flat znodes: %v", err)
	}
	checkClean(t, res)
	if res.Ops != 400 || res.Extra["flat"] != 1 {
		t.Errorf("flat znodes: %d loaded, extra %v", res.Ops, res.Extra)
	}

	wm := shortConfig(addr, ScenarioWatchMem)
	wm.Watchers, wm.Znodes, wm.RunID = 3, 50, "wm"
	res, err = Run(ctx, wm)
	if err != nil {
		t.Fatalf("watchmem: %v", err)
	}
	checkClean(t, res)
	if res.Extra["watches"] != 150 || res.Ops != 150 {
		t.Errorf("watchmem set %v watches (%d ops), want 150", res.Extra["watches"], res.Ops)
	}
	if _, ok := res.Extra["rss_per_watch_bytes"]; !ok {
		t.Errorf("no memory per watch: %v", res.Extra)
	}

	rw := shortConfig(addr, ScenarioWatch)
	rw.Recursive, rw.Watchers = true, 20
	res, err = Run(ctx, rw)
	if err != nil {
		t.Fatalf("recursive watch: %v", err)
	}
	checkClean(t, res)
	if res.Extra["recursive"] != 1 || res.Extra["watchers"] != 20 {
		t.Errorf("recursive watch extra %v", res.Extra)
	}
	// Only a persistent watch can be notified twice without re-arming: more
	// rounds than one means the watches stayed.
	if res.Ops < 2 {
		t.Errorf("recursive watch rounds: %d, want several", res.Ops)
	}
}

// ballast gives the tree 32 MiB of data, so that each snapshot takes
// longer to write than the snapshot watcher's 20 ms poll, however fast
// the disk: the watcher counts only files it sees growing.
func ballast(t *testing.T, addr string) {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := make([]byte, 512<<10)
	for i := range 64 {
		if _, err := c.Create(fmt.Sprintf("/ballast%d", i), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProbeTimesSnapshots: with a low snapCount the load makes the server
// snapshot while the probe runs; the probe finds the snapshot files, and
// the writes overlapping them are a subset of all writes.
func TestProbeTimesSnapshots(t *testing.T) {
	dir := t.TempDir()
	cfg := testutil.Config(dir)
	cfg.ForceSync, cfg.SnapCount = false, 40
	addr := servertest.Start(t, server.Options{Config: cfg}).Addr().String()
	ballast(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunProbe(ctx, ProbeConfig{Addr: addr, Duration: 3 * time.Second, LoadSessions: 2,
		SnapDirs: []string{dir}, ReadyAddr: addr, After: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Ready || res.ReadyMS <= 0 {
		t.Errorf("the member writing the probe path was not found ready: %+v", res)
	}
	if res.Probe.Count < 10 || res.Writes.Count <= res.Probe.Count || res.Failed != 0 {
		t.Errorf("writes: probe %d, all %d, failed %d", res.Probe.Count, res.Writes.Count, res.Failed)
	}
	if len(res.Snapshots) == 0 {
		t.Fatalf("no snapshot seen in %s", dir)
	}
	for _, f := range res.Snapshots {
		if f.Bytes <= 0 || !strings.HasSuffix(f.Path, "state.bin") || strings.Contains(f.Path, ".tmp") {
			t.Errorf("snapshot file %+v", f)
		}
	}
	if res.DuringSnapshot.Count > res.Writes.Count || res.LongestGapMS <= 0 {
		t.Errorf("during snapshot %d of %d writes, longest gap %v ms", res.DuringSnapshot.Count, res.Writes.Count, res.LongestGapMS)
	}
}

func TestSnapWatchFollowsGrowingFiles(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "snapshot.1")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newSnapWatch([]string{dir}, regexp.MustCompile(DefaultSnapMatch))
	t0 := time.Unix(100, 0)
	w.poll(t0)
	tmp := filepath.Join(dir, "2-10-123.tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tmp, "state.bin"), "ab")
	write(filepath.Join(tmp, "meta.json"), "{}")
	w.poll(t0.Add(time.Second))
	write(filepath.Join(tmp, "state.bin"), "abcd")
	w.poll(t0.Add(2 * time.Second))
	if err := os.Rename(tmp, filepath.Join(dir, "2-10-123")); err != nil {
		t.Fatal(err)
	}
	w.poll(t0.Add(3 * time.Second))
	// Freeing it by truncation is no write; a complete file first seen
	// late (a walk that raced a rename) is none either.
	write(filepath.Join(dir, "2-10-123", "state.bin"), "a")
	if err := os.MkdirAll(filepath.Join(dir, "1-5-100"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "1-5-100", "state.bin"), "complete")
	w.poll(t0.Add(4 * time.Second))
	w.poll(t0.Add(5 * time.Second))
	got := w.files()
	if len(got) != 1 {
		t.Fatalf("files %+v, want the one raft snapshot (the old one unchanged, meta.json not matched)", got)
	}
	f := got[0]
	if f.Bytes != 4 || f.Seconds != 1 || f.Path != filepath.Join(dir, "2-10-123", "state.bin") {
		t.Errorf("snapshot %+v, want 4 bytes written over 1 s at the renamed path", f)
	}
}

func TestReadGCPauses(t *testing.T) {
	log := strings.Join([]string{
		"2026/12/03 WARN something else",
		"gc 1 @0.010s 1%: 0.020+1.5+0.080 ms clock, 0.04+0.1/0.2/0+0.1 ms cpu, 4->5->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		"gc 2 @1.000s 2%: 0.100+30+2.000 ms clock, 0.2+1/2/0+4 ms cpu, 900->950->600 MB, 1000 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		"[1.234s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(256M) 5.000ms",
		"[1.300s][info][gc] GC(1) Concurrent Mark Cycle 12.000ms",
	}, "\n")
	g, err := ReadGCPauses(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if g.Cycles != 3 || g.Pauses.Count != 5 {
		t.Fatalf("cycles %d pauses %d, want 3 cycles (2 Go, 1 JVM) and 5 pauses", g.Cycles, g.Pauses.Count)
	}
	if g.HeapMaxMB != 900 {
		t.Errorf("heap max %v MB, want 900", g.HeapMaxMB)
	}
	if g.TotalMS < 7.19 || g.TotalMS > 7.21 {
		t.Errorf("total %v ms, want 7.2", g.TotalMS)
	}
	if g.Pauses.Max < 4900 || g.Pauses.Max > 5100 {
		t.Errorf("max pause %v us, want ~5000", g.Pauses.Max)
	}
}

// proxy forwards connections to target until it is killed, which closes
// its listener and every connection through it, as a killed member's
// kernel does.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { _ = p.kill() })
	return p
}

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

func (p *proxy) kill() error {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	return nil
}

// TestStormReconnectsLostSessions: half the sessions go through a proxy
// that is then killed; they resume on the server directly, none expires.
func TestStormReconnectsLostSessions(t *testing.T) {
	addr := startServer(t)
	px := startProxy(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunStorm(ctx, StormConfig{Addrs: []string{px.ln.Addr().String(), addr}, Sessions: 20,
		SessionTimeout: 6 * time.Second, Hold: 300 * time.Millisecond, After: 300 * time.Millisecond,
		Jitter: -1, Kill: px.kill, Sources: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Opened != 20 || res.OpenFailed != 0 || !res.Killed {
		t.Fatalf("opened %d (failed %d), killed %v", res.Opened, res.OpenFailed, res.Killed)
	}
	if res.Lost != 10 || res.Back != 10 || res.Expired != 0 || res.NotBack != 0 {
		t.Errorf("lost %d back %d expired %d not back %d, want 10 lost and back, none expired",
			res.Lost, res.Back, res.Expired, res.NotBack)
	}
	if res.AllBackMS <= 0 || res.Reconnect.Count != 10 {
		t.Errorf("all back after %v ms, %d reconnects timed", res.AllBackMS, res.Reconnect.Count)
	}
}

// TestStormCountsExpiredSessions: sessions resumed on a server that never
// knew them are refused as expired.
func TestStormCountsExpiredSessions(t *testing.T) {
	a, b := startServer(t), startServer(t)
	px := startProxy(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunStorm(ctx, StormConfig{Addrs: []string{px.ln.Addr().String(), b}, Sessions: 6,
		SessionTimeout: 6 * time.Second, Hold: 300 * time.Millisecond, After: 300 * time.Millisecond,
		Jitter: -1, Kill: px.kill})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 3 || res.Expired != 3 || res.Back != 0 || res.NotBack != 0 {
		t.Errorf("lost %d expired %d back %d not back %d, want 3 lost and expired",
			res.Lost, res.Expired, res.Back, res.NotBack)
	}
}

// TestStormWithoutKillHoldsSessions: without a kill, the storm opens and
// holds the sessions, and fails on no address.
func TestStormWithoutKillHoldsSessions(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunStorm(ctx, StormConfig{Addrs: []string{addr}, Sessions: 5, SessionTimeout: 3 * time.Second,
		Hold: 200 * time.Millisecond})
	if err != nil || res.Opened != 5 || res.Killed || res.Lost != 0 {
		t.Fatalf("storm without kill: %+v, %v", res, err)
	}
	if _, err := RunStorm(ctx, StormConfig{Sessions: 1}); err == nil {
		t.Fatal("storm without addresses: no error")
	}
	var ne *net.OpError
	_, err = RunProbe(ctx, ProbeConfig{Addr: "127.0.0.1:1", Duration: time.Second})
	if err == nil || (!errors.As(err, &ne) && !strings.Contains(err.Error(), "dial")) {
		t.Fatalf("probe of a closed port: %v", err)
	}
	_ = jute.OK
}
