package bench

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// Result is the outcome of one run; it is also the JSON that zkbench
// --json prints and that Summarize reads back. Latencies are microseconds.
type Result struct {
	Label       string    `json:"label,omitempty"`
	Name        string    `json:"name"`
	Workload    string    `json:"workload"`
	Addrs       []string  `json:"addrs"`
	Sessions    int       `json:"sessions"`
	InFlight    int       `json:"inflight"`
	DataSize    int       `json:"data_size"`
	Keys        int       `json:"keys"`
	ReadPercent int       `json:"read_percent,omitempty"`
	Started     time.Time `json:"started"`
	// Seconds is the measured time; Ops the successful operations in it.
	Seconds   float64                   `json:"seconds"`
	Ops       int64                     `json:"ops"`
	OpsPerSec float64                   `json:"ops_per_sec"`
	Latency   LatencySummary            `json:"latency_us"`
	PerKind   map[string]LatencySummary `json:"per_kind_latency_us,omitempty"`
	// Errors counts failed operations by ZooKeeper error name.
	Errors           map[string]int64 `json:"errors"`
	Server           *ServerUsage     `json:"server,omitempty"`
	ClientCPUSeconds float64          `json:"client_cpu_seconds"`
	// Extra holds scenario-specific figures, named with their unit.
	Extra map[string]float64 `json:"extra,omitempty"`
	// Profiles lists the pprof files saved per server (Config.PprofURLs).
	Profiles []ServerProfiles `json:"profiles,omitempty"`
}

// LatencySummary condenses a Histogram of nanoseconds into microseconds.
type LatencySummary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// Summarize returns the histogram's summary in microseconds.
func (h *Histogram) Summarize() LatencySummary {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return LatencySummary{
		Count: h.Count(),
		Mean:  h.Mean() / 1e3,
		P50:   us(h.Quantile(0.50)),
		P90:   us(h.Quantile(0.90)),
		P99:   us(h.Quantile(0.99)),
		P999:  us(h.Quantile(0.999)),
		Max:   us(h.Max()),
	}
}

// ServerUsage is what the server processes consumed during the measured
// time, from /proc.
type ServerUsage struct {
	PIDs       []int   `json:"pids"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUPerOpUS is server CPU microseconds per successful operation.
	CPUPerOpUS float64 `json:"cpu_us_per_op"`
	// RSSBytes is the resident memory at the end; PeakRSSBytes the peak.
	RSSBytes     int64 `json:"rss_bytes"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// newServerUsage computes usage from samples taken at the start and end of
// the measured time.
func newServerUsage(pids []int, start, end ProcSample, ops int64) *ServerUsage {
	u := &ServerUsage{
		PIDs:         pids,
		CPUSeconds:   (end.CPU - start.CPU).Seconds(),
		RSSBytes:     end.RSS,
		PeakRSSBytes: end.HWM,
	}
	if ops > 0 {
		u.CPUPerOpUS = u.CPUSeconds * 1e6 / float64(ops)
	}
	return u
}

// errorCounts renders error counts with ZooKeeper's names.
func errorCounts(m map[jute.Code]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for c, n := range m {
		out[c.String()] += n
	}
	return out
}

// FormatText writes a human-readable report of r.
func FormatText(w io.Writer, r *Result) error {
	var b strings.Builder
	label := r.Name
	if r.Label != "" {
		label = r.Label + " " + r.Name
	}
	fmt.Fprintf(&b, "%s: %d sessions x %d in flight, %d-byte data, %d keys, against %s\n",
		label, r.Sessions, r.InFlight, r.DataSize, r.Keys, strings.Join(r.Addrs, ","))
	if r.Latency.Count > 0 {
		fmt.Fprintf(&b, "  ops        %d in %.1fs = %.0f ops/s\n", r.Ops, r.Seconds, r.OpsPerSec)
		writeLatency(&b, "latency", r.Latency)
	}
	kinds := make([]string, 0, len(r.PerKind))
	for k := range r.PerKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if len(kinds) > 1 {
		for _, k := range kinds {
			writeLatency(&b, "  "+k, r.PerKind[k])
		}
	}
	fmt.Fprintf(&b, "  errors     %s\n", formatErrors(r.Errors))
	if s := r.Server; s != nil {
		fmt.Fprintf(&b, "  server     %.2f s CPU = %.1f us/op, RSS %.1f MiB (peak %.1f MiB)\n",
			s.CPUSeconds, s.CPUPerOpUS, float64(s.RSSBytes)/(1<<20), float64(s.PeakRSSBytes)/(1<<20))
	}
	fmt.Fprintf(&b, "  client     %.2f s CPU\n", r.ClientCPUSeconds)
	extras := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		extras = append(extras, k)
	}
	slices.Sort(extras)
	width := 24
	for _, k := range extras {
		width = max(width, len(k))
	}
	for _, k := range extras {
		fmt.Fprintf(&b, "  %-*s %.2f\n", width, k, r.Extra[k])
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(&b, "  profiles   %s: cpu %s (%d s), heap %s\n", p.URL, orDash(p.CPU), p.CPUSeconds, orDash(p.Heap))
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "  warning    %s: %s\n", p.URL, w)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeLatency(b *strings.Builder, name string, l LatencySummary) {
	fmt.Fprintf(b, "  %-10s us: p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f  mean %.0f  (n=%d)\n",
		name, l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean, l.Count)
}

func formatErrors(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
