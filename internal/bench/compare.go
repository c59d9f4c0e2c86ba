package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// LoadResults reads every *.json file in dir as a Result, in file-name
// order.
func LoadResults(dir string) ([]*Result, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("bench: list results: %w", err)
	}
	sort.Strings(paths)
	out := make([]*Result, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("bench: read result: %w", err)
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("bench: parse %s: %w", p, err)
		}
		if r.Name == "" {
			r.Name = r.Workload
		}
		out = append(out, &r)
	}
	return out, nil
}

// Stats summarizes one metric over the rounds of one target.
type Stats struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// newStats summarizes values (not empty); the median of an even count is
// the mean of the middle two.
func newStats(values []float64) Stats {
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Stats{Median: med, Min: v[0], Max: v[n-1], N: n}
}

// Row is one metric of one named run across targets.
type Row struct {
	Name   string `json:"name"`
	Metric string `json:"metric"`
	// HigherIsBetter tells how to read Ratio.
	HigherIsBetter bool             `json:"higher_is_better"`
	ByTarget       map[string]Stats `json:"by_target"`
	// Ratio is candidate median / baseline median (NaN-free: 0 when either
	// is missing or the baseline is zero).
	Ratio float64 `json:"ratio"`
}

// Comparison is the summary of many runs of several targets.
type Comparison struct {
	Baseline  string   `json:"baseline"`
	Candidate string   `json:"candidate"`
	Targets   []string `json:"targets"`
	Rows      []Row    `json:"rows"`
}

// metric extracts one figure from a Result.
type metric struct {
	name   string
	higher bool
	get    func(*Result) (float64, bool)
}

var metrics = []metric{
	{"ops/s", true, func(r *Result) (float64, bool) { return r.OpsPerSec, r.Ops > 0 }},
	{"p50 us", false, func(r *Result) (float64, bool) { return r.Latency.P50, r.Latency.Count > 0 }},
	{"p99 us", false, func(r *Result) (float64, bool) { return r.Latency.P99, r.Latency.Count > 0 }},
	{"p99.9 us", false, func(r *Result) (float64, bool) { return r.Latency.P999, r.Latency.Count > 0 }},
	{"errors", false, func(r *Result) (float64, bool) {
		var n int64
		for _, c := range r.Errors {
			n += c
		}
		return float64(n), true // rows of only zeros are dropped in Summarize
	}},
	{"server CPU us/op", false, func(r *Result) (float64, bool) {
		return serverField(r, func(s *ServerUsage) float64 { return s.CPUPerOpUS })
	}},
	{"server RSS MiB", false, func(r *Result) (float64, bool) {
		return serverField(r, func(s *ServerUsage) float64 { return float64(s.RSSBytes) / (1 << 20) })
	}},
}

func serverField(r *Result, f func(*ServerUsage) float64) (float64, bool) {
	if r.Server == nil || r.Ops == 0 {
		return 0, false
	}
	return f(r.Server), true
}

// extraHigherIsBetter lists the Extra figures where more is better.
var extraHigherIsBetter = map[string]bool{"notifications_per_sec": true}

// extraSkipped lists Extra figures that describe the setup, not a result.
var extraSkipped = map[string]bool{"watchers": true, "znodes": true, "rss_before_bytes": true, "rss_after_bytes": true,
	"probe_attempts": true}

// Summarize groups results by name, metric and target (Result.Label) and
// computes medians with their ranges and the candidate/baseline ratio.
func Summarize(results []*Result, baseline, candidate string) *Comparison {
	c := &Comparison{Baseline: baseline, Candidate: candidate, Targets: targetOrder(results, baseline, candidate)}
	type key struct{ name, metric string }
	values := map[key]map[string][]float64{}
	higher := map[string]bool{}
	var keys []key
	add := func(k key, target string, v float64) {
		if values[k] == nil {
			values[k] = map[string][]float64{}
			keys = append(keys, k)
		}
		values[k][target] = append(values[k][target], v)
	}
	for _, r := range results {
		for _, m := range metrics {
			if v, ok := m.get(r); ok {
				add(key{r.Name, m.name}, r.Label, v)
				higher[m.name] = m.higher
			}
		}
		for name, v := range r.Extra {
			if !extraSkipped[name] {
				add(key{r.Name, name}, r.Label, v)
				higher[name] = extraHigherIsBetter[name]
			}
		}
	}
	order := nameOrder(results)
	metricIdx := func(m string) int {
		for i, mm := range metrics {
			if mm.name == m {
				return i
			}
		}
		return len(metrics)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if order[a.name] != order[b.name] {
			return order[a.name] < order[b.name]
		}
		if metricIdx(a.metric) != metricIdx(b.metric) {
			return metricIdx(a.metric) < metricIdx(b.metric)
		}
		return a.metric < b.metric
	})
	for _, k := range keys {
		row := Row{Name: k.name, Metric: k.metric, HigherIsBetter: higher[k.metric], ByTarget: map[string]Stats{}}
		for t, vs := range values[k] {
			row.ByTarget[t] = newStats(vs)
		}
		if k.metric == "errors" && allZero(row.ByTarget) {
			continue
		}
		b, okB := row.ByTarget[baseline]
		cand, okC := row.ByTarget[candidate]
		if okB && okC && b.Median != 0 {
			row.Ratio = cand.Median / b.Median
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

func allZero(m map[string]Stats) bool {
	for _, s := range m {
		if s.Max != 0 {
			return false
		}
	}
	return true
}

// targetOrder lists the labels: baseline, candidate, then the rest sorted.
func targetOrder(results []*Result, baseline, candidate string) []string {
	seen := map[string]bool{}
	var rest []string
	for _, r := range results {
		if !seen[r.Label] {
			seen[r.Label] = true
			if r.Label != baseline && r.Label != candidate {
				rest = append(rest, r.Label)
			}
		}
	}
	sort.Strings(rest)
	var out []string
	for _, t := range []string{baseline, candidate} {
		if seen[t] {
			out = append(out, t)
		}
	}
	return append(out, rest...)
}

// nameOrder ranks run names: a name that is itself a workload takes that
// workload's place in Workloads(); other runs of an operation workload (such
// as latency-get) come after the operation workloads and before the
// scenarios; runs of unknown workloads (such as restart) come last. Ties go
// by name.
func nameOrder(results []*Result) map[string]int {
	firstScenario := slices.Index(workloadNames, ScenarioWatch)
	rank := func(name, workload string) int {
		if i := slices.Index(workloadNames, name); i >= 0 {
			return 2 * i
		}
		if i := slices.Index(workloadNames, workload); i >= 0 && i < firstScenario {
			return 2*firstScenario - 1
		}
		return 2 * len(workloadNames)
	}
	ranks := map[string]int{}
	var names []string
	for _, r := range results {
		if _, ok := ranks[r.Name]; !ok {
			ranks[r.Name] = rank(r.Name, r.Workload)
			names = append(names, r.Name)
		}
	}
	sort.SliceStable(names, func(i, j int) bool {
		if ranks[names[i]] != ranks[names[j]] {
			return ranks[names[i]] < ranks[names[j]]
		}
		return names[i] < names[j]
	})
	out := make(map[string]int, len(names))
	for i, n := range names {
		out[n] = i
	}
	return out
}

// formatValue prints a figure compactly.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// String renders the median with its range, e.g. "41.2k (40.1k-42.0k)".
func (s Stats) String() string {
	return fmt.Sprintf("%s (%s-%s)", formatValue(s.Median), formatValue(s.Min), formatValue(s.Max))
}

// WriteTable prints the comparison as an aligned text table: per target
// the median with its min-max range, then the ratio candidate/baseline.
func (c *Comparison) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"run", "metric"}
	for _, t := range c.Targets {
		head = append(head, t+" median (min-max)")
	}
	head = append(head, c.Candidate+"/"+c.Baseline)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range c.Rows {
		cells := []string{r.Name, r.Metric}
		for _, t := range c.Targets {
			if s, ok := r.ByTarget[t]; ok {
				cells = append(cells, s.String())
			} else {
				cells = append(cells, "-")
			}
		}
		cells = append(cells, formatRatio(r))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// formatRatio shows the ratio with an arrow when it is better (+) or
// worse (-) for the candidate.
func formatRatio(r Row) string {
	if r.Ratio == 0 {
		return "-"
	}
	s := strconv.FormatFloat(r.Ratio, 'f', 2, 64)
	better := r.Ratio > 1 == r.HigherIsBetter
	switch {
	case s == "1.00":
		return s
	case better:
		return s + " (+)"
	}
	return s + " (-)"
}

// WriteCSV writes one line per row: run, metric, per target median, min,
// max and rounds, then the ratio.
func (c *Comparison) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"run", "metric", "higher_is_better"}
	for _, t := range c.Targets {
		head = append(head, t+"_median", t+"_min", t+"_max", t+"_rounds")
	}
	head = append(head, "ratio_"+c.Candidate+"_over_"+c.Baseline)
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range c.Rows {
		rec := []string{r.Name, r.Metric, strconv.FormatBool(r.HigherIsBetter)}
		for _, t := range c.Targets {
			s, ok := r.ByTarget[t]
			if !ok {
				rec = append(rec, "", "", "", "0")
				continue
			}
			rec = append(rec, f(s.Median), f(s.Min), f(s.Max), strconv.Itoa(s.N))
		}
		rec = append(rec, f(r.Ratio))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the comparison as indented JSON.
func (c *Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}
