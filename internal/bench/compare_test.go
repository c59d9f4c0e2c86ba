package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// syntheticResults are three rounds of two targets with known figures.
func syntheticResults() []*Result {
	var out []*Result
	mk := func(label, name, workload string, ops float64, p99 float64, cpu float64, extra map[string]float64) *Result {
		r := &Result{Label: label, Name: name, Workload: workload, Seconds: 10, OpsPerSec: ops, Ops: int64(ops * 10),
			Latency: LatencySummary{Count: int64(ops * 10), P50: p99 / 4, P99: p99, P999: p99 * 2},
			Errors:  map[string]int64{}, Extra: extra}
		if cpu > 0 {
			r.Server = &ServerUsage{CPUPerOpUS: cpu, RSSBytes: 100 << 20}
		}
		if ops == 0 {
			r.Ops, r.Latency = 0, LatencySummary{}
		}
		return r
	}
	for round, f := range []float64{1.0, 1.1, 0.9} {
		out = append(out,
			mk("zookeeper", "get", "get", 40000*f, 2000*f, 10, nil),
			mk("zkserverd", "get", "get", 60000*f, 1000*f, 5, nil),
			mk("zookeeper", "watch", "watch", 300*f, 8000, 0, map[string]float64{"notifications_per_sec": 30000 * f, "watchers": 100}),
			mk("zkserverd", "watch", "watch", 400*f, 4000, 0, map[string]float64{"notifications_per_sec": 40000 * f, "watchers": 100}),
			mk("zookeeper", "restart", "restart", 0, 0, 0, map[string]float64{"ready_ms": 900 + 100*float64(round)}),
			mk("zkserverd", "restart", "restart", 0, 0, 0, map[string]float64{"ready_ms": 90 + 10*float64(round)}),
			mk("zkserverd", "create", "create", 15000*f, 9000, 20, nil), // candidate only
			mk("zookeeper", "latency-get", "get", 5000*f, 300, 0, nil),
			mk("zkserverd", "latency-get", "get", 5000*f, 300, 0, nil),
		)
	}
	out[1].Errors["ConnectionLoss"] = 2
	return out
}

func findRow(t *testing.T, c *Comparison, name, metric string) Row {
	t.Helper()
	for _, r := range c.Rows {
		if r.Name == name && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s/%s", name, metric)
	return Row{}
}

func TestSummarize(t *testing.T) {
	c := Summarize(syntheticResults(), "zookeeper", "zkserverd")
	if len(c.Targets) != 2 || c.Targets[0] != "zookeeper" || c.Targets[1] != "zkserverd" {
		t.Fatalf("targets = %v", c.Targets)
	}
	get := findRow(t, c, "get", "ops/s")
	if s := get.ByTarget["zookeeper"]; s.Median != 40000 || s.Min != 36000 || math.Abs(s.Max-44000) > 1e-6 || s.N != 3 {
		t.Errorf("zookeeper get ops/s = %+v", s)
	}
	if math.Abs(get.Ratio-1.5) > 1e-9 || !get.HigherIsBetter {
		t.Errorf("get ops/s ratio = %v (higher is better %v), want 1.5", get.Ratio, get.HigherIsBetter)
	}
	if r := findRow(t, c, "get", "p99 us"); math.Abs(r.Ratio-0.5) > 1e-9 || r.HigherIsBetter {
		t.Errorf("get p99 ratio = %v", r.Ratio)
	}
	if r := findRow(t, c, "latency-get", "ops/s"); formatRatio(r) != "1.00" {
		t.Errorf("equal medians should show a plain 1.00, got %q", formatRatio(r))
	}
	if r := findRow(t, c, "restart", "ready_ms"); r.ByTarget["zkserverd"].Median != 100 || math.Abs(r.Ratio-0.1) > 1e-9 {
		t.Errorf("restart = %+v", r)
	}
	if r := findRow(t, c, "create", "ops/s"); r.Ratio != 0 || len(r.ByTarget) != 1 {
		t.Errorf("a run of one target only must have no ratio: %+v", r)
	}
	if r := findRow(t, c, "get", "errors"); r.ByTarget["zkserverd"].Max != 2 {
		t.Errorf("errors row = %+v", r)
	}
	for _, r := range c.Rows {
		if r.Metric == "watchers" {
			t.Errorf("setup figure %q should not be a row", r.Metric)
		}
	}
	// Rows follow the order of Workloads: create, get, other runs of
	// operation workloads, watch, then unknown workloads.
	var names []string
	for _, r := range c.Rows {
		if len(names) == 0 || names[len(names)-1] != r.Name {
			names = append(names, r.Name)
		}
	}
	if want := []string{"create", "get", "latency-get", "watch", "restart"}; !equalStrings(names, want) {
		t.Errorf("row order %v, want %v", names, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMedianOfEvenCount(t *testing.T) {
	if s := newStats([]float64{4, 1, 3, 2}); s.Median != 2.5 || s.Min != 1 || s.Max != 4 || s.N != 4 {
		t.Fatalf("stats = %+v", s)
	}
}

// TestComparisonOutputsGolden checks the table, CSV and SVG against
// testdata/compare.*; run with -update to rewrite them, and review the diff.
func TestComparisonOutputsGolden(t *testing.T) {
	c := Summarize(syntheticResults(), "zookeeper", "zkserverd")
	for _, g := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"compare.table.txt", c.WriteTable},
		{"compare.csv", c.WriteCSV},
		{"compare.svg", c.WriteSVG},
	} {
		var buf bytes.Buffer
		if err := g.write(&buf); err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs from the golden file:\n%s", g.file, buf.String())
		}
	}
}

func TestSVGIsWellFormedXML(t *testing.T) {
	var buf bytes.Buffer
	if err := Summarize(syntheticResults(), "zookeeper", "zkserverd").WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&buf)
	rects, noResult := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
		if cd, ok := tok.(xml.CharData); ok && string(cd) == "zookeeper: no result" {
			noResult++
		}
	}
	// background + 2 legend swatches + bars: ops/s (get 2, latency-get 2,
	// watch 2, create 1), p99 (the same 7) and restart (2).
	if rects != 1+2+14+2 {
		t.Fatalf("SVG has %d rects, want 19", rects)
	}
	// create has no zookeeper result, in the ops/s and the p99 panel.
	if noResult != 2 {
		t.Fatalf("SVG marks %d missing results, want 2", noResult)
	}
}

// TestSVGEveryRunBothTargets checks that each panel has a group for every
// run with that metric, and in each group a bar or a "no result" for both
// targets.
func TestSVGEveryRunBothTargets(t *testing.T) {
	c := Summarize(syntheticResults(), "zookeeper", "zkserverd")
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, p := range chartPanels {
		start := strings.Index(svg, ">"+html.EscapeString(p.title)+"<")
		if start < 0 {
			t.Fatalf("no panel %q", p.title)
		}
		panel := svg[start:] // from the title on; each group ends at the next x="10" text

		for _, r := range c.Rows {
			if r.Metric != p.metric {
				continue
			}
			at := strings.Index(panel, ">"+r.Name+"<")
			if at < 0 {
				t.Errorf("panel %q lacks run %q", p.metric, r.Name)
				continue
			}
			group := panel[at:]
			if next := strings.Index(group, `<text x="10"`); next >= 0 {
				group = group[:next] // the next run's name
			}
			for _, target := range c.Targets {
				s, ok := r.ByTarget[target]
				want := target + ": no result"
				if ok {
					want = s.String()
				}
				if !strings.Contains(group, ">"+want+"<") {
					t.Errorf("panel %q, run %q: nothing for %s (want %q)", p.metric, r.Name, target, want)
				}
			}
		}
	}
}

func TestLoadResults(t *testing.T) {
	dir := t.TempDir()
	for i, r := range syntheticResults()[:3] {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, string(rune('a'+i))+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644)
	got, err := LoadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Label != "zookeeper" || got[2].Name != "watch" {
		t.Fatalf("loaded %d results: %+v", len(got), got)
	}
	os.WriteFile(filepath.Join(dir, "z.json"), []byte("{"), 0o644)
	if _, err := LoadResults(dir); err == nil {
		t.Fatal("a broken file should fail the load")
	}
}
