package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// startServer runs an in-process zkserverd on a free loopback port, with
// forceSync=no: the tests check the load generator, not the disk.
func startServer(t *testing.T) string {
	t.Helper()
	cfg := testutil.Config(t.TempDir())
	cfg.ForceSync = false
	return servertest.Start(t, server.Options{Config: cfg}).Addr().String()
}

// shortConfig is a small, brief run against addr. The server runs in this
// process, so this process's pid stands in for the server's.
func shortConfig(addr, workload string) Config {
	cfg := DefaultConfig()
	cfg.Addrs = []string{addr}
	cfg.Workload = workload
	cfg.Sessions, cfg.InFlight = 4, 8
	cfg.Keys, cfg.ChildrenPerDir = 100, 10
	cfg.Warmup, cfg.Duration = 100*time.Millisecond, 600*time.Millisecond
	cfg.Watchers, cfg.Znodes, cfg.Settle = 5, 400, 0
	cfg.ServerPIDs = []int{os.Getpid()}
	cfg.Label = "inprocess"
	return cfg
}

func checkClean(t *testing.T, res *Result) {
	t.Helper()
	if res.Ops <= 0 || res.OpsPerSec <= 0 {
		t.Errorf("%s: no operations measured: %+v", res.Name, res)
	}
	if len(res.Errors) != 0 {
		t.Errorf("%s: errors %v", res.Name, res.Errors)
	}
	if res.Latency.Count != res.Ops || res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 {
		t.Errorf("%s: implausible latency %+v for %d ops", res.Name, res.Latency, res.Ops)
	}
	if res.Server == nil || res.Server.RSSBytes <= 0 || res.Server.CPUSeconds < 0 {
		t.Errorf("%s: server usage %+v", res.Name, res.Server)
	}
}

func TestRunAgainstInProcessServer(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var all []*Result
	for _, w := range []string{"get", "multi", "mixed"} {
		cfg := shortConfig(addr, w)
		cfg.Cleanup, cfg.RunID = w == "multi", "e2e-"+w
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		checkClean(t, res)
		all = append(all, res)
	}
	if kinds := all[1].PerKind; len(kinds) != 4 || kinds["multi"].Count == 0 {
		t.Errorf("multi mix per-kind latencies: %v", kinds)
	}
	if all[0].Server.CPUPerOpUS <= 0 {
		t.Errorf("CPU per op not computed: %+v", all[0].Server)
	}
	// The multi run cleaned up: its run directory is gone, while the keys
	// stay for the next run.
	err := withConn(ctx, shortConfig(addr, "get"), func(c *Conn) error {
		if _, err := c.Call(ctx, jute.OpExists, &jute.ExistsRequest{Path: "/zkbench/r-e2e-multi"}, nil); !errors.Is(err, jute.NoNode) {
			t.Errorf("run directory after cleanup: %v, want NoNode", err)
		}
		_, err := c.Call(ctx, jute.OpExists, &jute.ExistsRequest{Path: "/zkbench/k/d0009/k0000099"}, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestScenariosAgainstInProcessServer(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, w := range []string{ScenarioWatch, ScenarioConnect, ScenarioZnodes} {
		cfg := shortConfig(addr, w)
		cfg.Sessions = 2
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		checkClean(t, res)
		switch w {
		case ScenarioWatch:
			if res.PerKind["first-notification"].P50 > res.Latency.P50 {
				t.Errorf("first notification later than the last: %+v", res.PerKind)
			}
		case ScenarioZnodes:
			if res.Ops != 400 {
				t.Errorf("znodes loaded %d, want 400", res.Ops)
			}
			if _, ok := res.Extra["rss_per_znode_bytes"]; !ok {
				t.Errorf("no memory per znode: %v", res.Extra)
			}
			before, after := res.Extra["rss_before_bytes"], res.Extra["rss_after_bytes"]
			if before <= 0 || after <= 0 || res.Extra["rss_per_znode_bytes"] != (after-before)/400 ||
				res.Extra["rss_after_per_znode_bytes"] != after/400 || after != float64(res.Server.RSSBytes) {
				t.Errorf("memory figures do not add up: %v, server %+v", res.Extra, res.Server)
			}
		}
	}
	n, err := DeleteTree(ctx, shortConfig(addr, "get"), "/zkbench")
	if err != nil || n < 400 {
		t.Fatalf("DeleteTree deleted %d znodes: %v", n, err)
	}
	err = withConn(ctx, shortConfig(addr, "get"), func(c *Conn) error {
		_, err := c.Call(ctx, jute.OpExists, &jute.ExistsRequest{Path: "/zkbench"}, nil)
		return err
	})
	if !errors.Is(err, jute.NoNode) {
		t.Fatalf("/zkbench after DeleteTree: %v, want NoNode", err)
	}
	if n, err := DeleteTree(ctx, shortConfig(addr, "get"), "/zkbench"); n != 0 || err != nil {
		t.Fatalf("DeleteTree of a missing tree: %d, %v", n, err)
	}
	ready, err := WaitReady(ctx, shortConfig(addr, "get"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ready.Name != "restart" || ready.Extra["ready_ms"] <= 0 {
		t.Errorf("wait result %+v", ready)
	}
}

// TestConnectScenarioEndsEverySession: session churn closes every session
// it opens (the server's session count is back to zero), and ConnectCycle
// reports when the session was established.
func TestConnectScenarioEndsEverySession(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, shortConfig(addr, ScenarioConnect))
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	start := time.Now()
	connected, err := ConnectCycle(ctx, addr, DialOptions{})
	if err != nil || connected.Before(start) || time.Since(connected) < 0 {
		t.Fatalf("ConnectCycle: connected at %v (started %v): %v", connected, start, err)
	}
	if n := globalSessions(t, addr); n != "0" {
		t.Fatalf("zk_global_sessions = %s after session churn, want 0", n)
	}
}

// globalSessions reads zk_global_sessions from the server's mntr.
func globalSessions(t *testing.T, addr string) string {
	t.Helper()
	v := testutil.FourLetterLine(addr, "mntr", "zk_global_sessions\t")
	if v == "" {
		out, err := testutil.FourLetter(addr, "mntr")
		t.Fatalf("no zk_global_sessions in mntr (%v):\n%s", err, out)
	}
	return v
}

// TestRunWithoutAnswersFails runs against a server that accepts sessions but
// never answers a request: the run must end with an error, not report a run
// without figures.
func TestRunWithoutAnswersFails(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go silentSession(nc)
		}
	}()
	cfg := shortConfig(ln.Addr().String(), ScenarioConnect)
	cfg.Sessions = 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = Run(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "no operation completed") {
		t.Fatalf("run against a silent server: %v, want a no-operation error", err)
	}
}

// silentSession completes a session handshake, then reads and drops every
// request until the client goes.
func silentSession(nc net.Conn) {
	defer nc.Close()
	if _, err := jute.ReadFrame(nc, 1<<20, nil); err != nil {
		return
	}
	resp := &jute.ConnectResponse{TimeOut: 30000, SessionID: 1, Passwd: make([]byte, 16)}
	if _, err := nc.Write(jute.AppendFrame(nil, resp)); err != nil {
		return
	}
	io.Copy(io.Discard, nc)
}
