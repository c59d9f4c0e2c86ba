package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/bench"
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
