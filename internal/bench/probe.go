package bench

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// A write probe measures what clients see while a server does something
// heavy: a snapshot of a large tree, or a wiped member's catch-up. One
// session writes at a steady pace (the probe), LoadSessions more keep
// writes in flight (so that a snapshot's transaction count is reached),
// and every write's latency is kept with its send time. Snapshot files
// appearing in SnapDirs are timed by polling their sizes, and the writes
// that overlap a snapshot are summarized apart. With ReadyAddr the probe
// ends once that member serves ReadyPath (created on Addr at the start),
// which times a catch-up.

// ProbeConfig configures RunProbe.
type ProbeConfig struct {
	// Addr is the member the probe and the load write to.
	Addr string
	// Interval paces the probe's writes (default 10ms).
	Interval time.Duration
	// LoadSessions sessions each keep LoadInFlight setData in flight.
	LoadSessions int
	LoadInFlight int
	// DataSize is the size of every write (default 100).
	DataSize int
	// Duration bounds the probe (default 60s); with ReadyAddr it ends
	// sooner, After (default 2s) past the member's readiness.
	Duration time.Duration
	After    time.Duration
	// ReadyAddr, if set, is polled (a new session, exists ReadyPath)
	// every 50ms; ReadyMS counts from Since (default: the probe's start).
	ReadyAddr string
	Since     time.Time
	// Path is the probe's znode (default /zkbench-probe); the load writes
	// Path-0, Path-1, ...
	Path string
	// SnapDirs are polled every 20ms for files SnapMatch matches (default
	// DefaultSnapMatch).
	SnapDirs  []string
	SnapMatch string
}

// withDefaults fills in what was left zero.
func (c ProbeConfig) withDefaults() ProbeConfig {
	if c.Interval <= 0 {
		c.Interval = 10 * time.Millisecond
	}
	if c.DataSize <= 0 {
		c.DataSize = 100
	}
	if c.Duration <= 0 {
		c.Duration = time.Minute
	}
	if c.After <= 0 {
		c.After = 2 * time.Second
	}
	if c.Path == "" {
		c.Path = "/zkbench-probe"
	}
	if c.SnapMatch == "" {
		c.SnapMatch = DefaultSnapMatch
	}
	if c.LoadInFlight <= 0 {
		c.LoadInFlight = 8
	}
	return c
}

// ProbeResult is what RunProbe saw. Latencies are microseconds.
type ProbeResult struct {
	Seconds float64 `json:"seconds"`
	// Probe is the paced writer's latency over the whole probe, Writes
	// that of every write (probe and load), DuringSnapshot that of the
	// writes overlapping a snapshot file being written.
	Probe          LatencySummary `json:"probe_us"`
	Writes         LatencySummary `json:"writes_us"`
	DuringSnapshot LatencySummary `json:"during_snapshot_us"`
	// LongestGapMS is the longest time between two acknowledged probe
	// writes: the client-visible pause.
	LongestGapMS float64    `json:"longest_gap_ms"`
	Failed       int64      `json:"failed"`
	Snapshots    []SnapFile `json:"snapshots,omitempty"`
	ReadyMS      float64    `json:"ready_ms,omitempty"`
	Ready        bool       `json:"ready"`
}

// probeSample is one write: when it was sent and how long it took.
type probeSample struct {
	sent time.Time
	took time.Duration
}

// RunProbe runs the probe until Duration passes, ReadyAddr is ready (plus
// After), or ctx ends.
func RunProbe(ctx context.Context, cfg ProbeConfig) (*ProbeResult, error) {
	cfg = cfg.withDefaults()
	match, err := regexp.Compile(cfg.SnapMatch)
	if err != nil {
		return nil, fmt.Errorf("bench: snap-match: %w", err)
	}
	c, err := Dial(ctx, cfg.Addr, DialOptions{})
	if err != nil {
		return nil, err
	}
	defer closeAll([]*Conn{c})
	if err := ensurePath(ctx, c, cfg.Path); err != nil {
		return nil, err
	}
	start := time.Now()
	if cfg.Since.IsZero() {
		cfg.Since = start
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	res := &ProbeResult{}
	var wg sync.WaitGroup
	var probe []probeSample
	wg.Go(func() { probe = probeWrites(runCtx, c, cfg, &res.Failed) })
	loads := make([][]probeSample, cfg.LoadSessions)
	loadErrs := make([]error, cfg.LoadSessions)
	for i := range cfg.LoadSessions {
		wg.Go(func() { loads[i], loadErrs[i] = loadWrites(runCtx, cfg, i) })
	}
	sw := newSnapWatch(cfg.SnapDirs, match)
	if cfg.ReadyAddr != "" {
		wg.Go(func() {
			if at, ok := waitExists(runCtx, cfg.ReadyAddr, cfg.Path); ok {
				res.Ready, res.ReadyMS = true, ms(at.Sub(cfg.Since))
				sleepUntil(runCtx, at.Add(cfg.After))
				cancel()
			}
		})
	}
	pollSnapshots(runCtx, sw)
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Snapshots = sw.files()
	summarizeProbe(res, probe, loads)
	if err := errors.Join(loadErrs...); err != nil && ctx.Err() == nil {
		return res, err
	}
	return res, ctx.Err()
}

// pollSnapshots polls the snapshot directories until ctx ends.
func pollSnapshots(ctx context.Context, sw *snapWatch) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		sw.poll(time.Now())
		select {
		case <-ctx.Done():
			sw.poll(time.Now())
			return
		case <-t.C:
		}
	}
}

// probeWrites writes cfg.Path every Interval on c, reconnecting to
// cfg.Addr when the session breaks, until ctx ends.
func probeWrites(ctx context.Context, c *Conn, cfg ProbeConfig, failed *int64) []probeSample {
	payload := make([]byte, cfg.DataSize)
	var out []probeSample
	next := time.Now()
	for ctx.Err() == nil {
		if sleepUntil(ctx, next) != nil {
			break
		}
		next = next.Add(cfg.Interval)
		sent := time.Now()
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Call(callCtx, jute.OpSetData, &jute.SetDataRequest{Path: cfg.Path, Data: payload, Version: -1}, nil)
		cancel()
		if err == nil {
			out = append(out, probeSample{sent: sent, took: time.Since(sent)})
			continue
		}
		if ctx.Err() != nil {
			break
		}
		*failed++
		if c.Err() != nil {
			if nc, err := Dial(ctx, cfg.Addr, DialOptions{}); err == nil {
				defer closeAll([]*Conn{nc})
				c = nc
			}
		}
		next = time.Now()
	}
	return out
}

// loadWrites keeps LoadInFlight setData of Path-i in flight on a session
// of its own until ctx ends.
func loadWrites(ctx context.Context, cfg ProbeConfig, i int) ([]probeSample, error) {
	c, err := Dial(ctx, cfg.Addr, DialOptions{})
	if err != nil {
		return nil, err
	}
	defer closeAll([]*Conn{c})
	path := fmt.Sprintf("%s-%d", cfg.Path, i)
	if err := ensurePath(ctx, c, path); err != nil {
		return nil, err
	}
	payload := make([]byte, cfg.DataSize)
	var mu sync.Mutex
	var out []probeSample
	for ctx.Err() == nil {
		err := pipeline(ctx, c, 1000, cfg.LoadInFlight, func(int) (jute.OpCode, jute.Record) {
			return jute.OpSetData, &jute.SetDataRequest{Path: path, Data: payload, Version: -1}
		}, acceptOK, func(_ int, r Reply, d time.Duration) {
			mu.Lock()
			out = append(out, probeSample{sent: r.Received.Add(-d), took: d})
			mu.Unlock()
		})
		if err != nil && ctx.Err() == nil {
			return out, err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return out, nil
}

// waitExists polls addr with a new session and exists(path) every 50ms
// until the znode is there, returning the moment it was seen.
func waitExists(ctx context.Context, addr, path string) (time.Time, bool) {
	opts := DialOptions{DialTimeout: time.Second}
	for ctx.Err() == nil {
		c, err := Dial(ctx, addr, opts)
		if err == nil {
			callCtx, cancel := context.WithTimeout(ctx, time.Second)
			_, err = c.Call(callCtx, jute.OpExists, &jute.ExistsRequest{Path: path}, nil)
			cancel()
			closeAll([]*Conn{c})
			if err == nil {
				return time.Now(), true
			}
		}
		if sleepUntil(ctx, time.Now().Add(50*time.Millisecond)) != nil {
			break
		}
	}
	return time.Time{}, false
}

// summarizeProbe fills res's latency summaries from the samples and the
// snapshot windows.
func summarizeProbe(res *ProbeResult, probe []probeSample, loads [][]probeSample) {
	ph, all, during := NewHistogram(), NewHistogram(), NewHistogram()
	inSnap := func(s probeSample) bool {
		end := s.sent.Add(s.took)
		for _, f := range res.Snapshots {
			if !end.Before(f.First) && !s.sent.After(f.Last) {
				return true
			}
		}
		return false
	}
	add := func(s probeSample) {
		all.RecordDuration(s.took)
		if inSnap(s) {
			during.RecordDuration(s.took)
		}
	}
	var last time.Time
	for _, s := range probe {
		ph.RecordDuration(s.took)
		add(s)
		acked := s.sent.Add(s.took)
		if !last.IsZero() && ms(acked.Sub(last)) > res.LongestGapMS {
			res.LongestGapMS = ms(acked.Sub(last))
		}
		last = acked
	}
	for _, l := range loads {
		for _, s := range l {
			add(s)
		}
	}
	res.Probe, res.Writes, res.DuringSnapshot = ph.Summarize(), all.Summarize(), during.Summarize()
}
