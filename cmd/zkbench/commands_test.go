package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zkserverd/zkserverd/internal/bench"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// execute runs the command tree with args and returns its output.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String() + errOut.String(), err
}

func TestReportWritesAllOutputs(t *testing.T) {
	dir := t.TempDir()
	for i, label := range []string{"zookeeper", "zkserverd", "zookeeper", "zkserverd"} {
		r := bench.Result{Label: label, Name: "get", Workload: "get", Seconds: 1, Ops: int64(100 * (i + 1)),
			OpsPerSec: float64(100 * (i + 1)), Latency: bench.LatencySummary{Count: 1, P50: 10, P99: 20}}
		data, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	csvPath, jsonPath, svgPath := filepath.Join(dir, "s.csv"), filepath.Join(dir, "s.json.out"), filepath.Join(dir, "c.svg")
	out, err := execute(t, "report", "--dir", dir, "--csv", csvPath, "--summary-json", jsonPath, "--svg", svgPath)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	// zookeeper medians 200 (100, 300), zkserverd 300 (200, 400): ratio 1.50.
	if !strings.Contains(out, "get") || !strings.Contains(out, "1.50 (+)") {
		t.Fatalf("table lacks the ratio:\n%s", out)
	}
	for _, p := range []string{csvPath, jsonPath, svgPath} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", p, err)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	tests := [][]string{
		{"run", "--server-pid", "abc"},
		{"run", "--workload", "nope", "--addr", "127.0.0.1:1"},
		{"report", "--dir", "/nonexistent-dir-for-zkbench"},
	}
	for _, args := range tests {
		if _, err := execute(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

func TestFreePort(t *testing.T) {
	out, err := execute(t, "freeport", "-n", "3")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range strings.Fields(out) {
		if p, err := strconv.Atoi(f); err != nil || p <= 0 || p > 65535 || seen[f] {
			t.Fatalf("bad or repeated port %q in %q", f, out)
		}
		seen[f] = true
	}
	if len(seen) != 3 {
		t.Fatalf("want 3 ports, got %q", out)
	}
}

// TestRunProfileFlags runs a short get workload against an in-process
// server with --pprof pointing at a fake pprof endpoint, and checks the
// saved files and the JSON fields; a second run against a refusing
// endpoint still succeeds, with a warning.
func TestRunProfileFlags(t *testing.T) {
	cfg := testutil.Config(t.TempDir())
	cfg.ForceSync = false // the workload's speed is not under test
	addr := servertest.Start(t, server.Options{Config: cfg}).Addr().String()

	profile := append([]byte{0x1f, 0x8b}, "fake profile"...)
	var mu sync.Mutex // guards queries
	var queries []string
	pprof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.Write(profile)
	}))
	defer pprof.Close()
	refusing := httptest.NewServer(http.NotFoundHandler())
	defer refusing.Close()

	dir := t.TempDir()
	short := []string{"run", "--addr", addr, "--workload", "get", "--keys", "20", "--sessions", "2", "--inflight", "2",
		"--warmup", "50ms", "--duration", "1500ms", "--label", "zkserverd", "--profile-dir", dir, "--json"}
	out, err := execute(t, append(short, "--pprof", strings.TrimPrefix(pprof.URL, "http://"))...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not one JSON result: %v\n%s", err, out)
	}
	cpu, heap := filepath.Join(dir, "get-zkserverd.cpu.pprof"), filepath.Join(dir, "get-zkserverd.heap.pprof")
	if len(res.Profiles) != 1 || res.Profiles[0].CPU != cpu || res.Profiles[0].Heap != heap ||
		res.Profiles[0].CPUSeconds != 2 || res.Profiles[0].URL != pprof.URL {
		t.Fatalf("profiles = %+v", res.Profiles)
	}
	for _, f := range []string{cpu, heap} {
		if data, err := os.ReadFile(f); err != nil || !bytes.Equal(data, profile) {
			t.Errorf("%s: %q, %v", f, data, err)
		}
	}
	mu.Lock()
	if want := []string{"/debug/pprof/profile?seconds=2", "/debug/pprof/heap?gc=1"}; !slices.Equal(queries, want) {
		t.Errorf("requests %v, want %v", queries, want)
	}
	mu.Unlock()

	out, err = execute(t, append(short, "--pprof", refusing.URL, "--name", "again")...)
	if err != nil {
		t.Fatalf("a profile failure failed the run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "zkbench: warning: "+refusing.URL+": cpu profile") || !strings.Contains(out, "404") {
		t.Errorf("no warning for the refused profiles:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "again-zkserverd.cpu.pprof")); !os.IsNotExist(err) {
		t.Errorf("a refused profile left a file: %v", err)
	}
}
