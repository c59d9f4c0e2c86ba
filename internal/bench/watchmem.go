package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// runWatchMem measures the server's memory per watch: it loads Znodes
// znodes (as the znodes scenario does, Sessions sessions), samples the
// server's RSS after Settle, then has Watchers sessions each set a data
// watch (getData with watch) on every one of them, and samples again
// after Settle. Extra carries the watches set and the RSS growth per
// watch (rss_per_watch_bytes), which includes the watching sessions' own
// small footprint. Latency is that of the watch-setting getData calls.
func runWatchMem(ctx context.Context, cfg Config) (*Result, error) {
	l := newLayout(cfg)
	if err := setupZnodeDirs(ctx, cfg, &l); err != nil {
		return nil, err
	}
	conns, err := dialAll(ctx, cfg, cfg.Sessions)
	if err != nil {
		return nil, err
	}
	counts, _, err := loadZnodes(ctx, cfg, &l, conns)
	closeAll(conns)
	if err != nil {
		return nil, err
	}
	if err := sleepUntil(ctx, time.Now().Add(cfg.Settle)); err != nil {
		return nil, err
	}
	smp := newSampler(cfg)
	smp.sample(ctx, false)
	watchers, err := dialParallel(ctx, cfg, cfg.Watchers, cfg.dialOptions())
	defer func() { closeAll(watchers) }()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res := newResult(cfg, start)
	h, err := watchEvery(ctx, cfg, &l, watchers, counts)
	elapsed := time.Since(start)
	if err != nil {
		return nil, err
	}
	if err := sleepUntil(ctx, time.Now().Add(cfg.Settle)); err != nil {
		return nil, err
	}
	smp.sample(ctx, true)
	res.Sessions = cfg.Watchers
	res.Ops = h.Count()
	res.Seconds = elapsed.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.Latency = h.Summarize()
	res.Extra["znodes"] = float64(cfg.Znodes)
	res.Extra["watches"] = float64(res.Ops)
	if err := smp.fill(ctx, res); err != nil {
		return nil, err
	}
	if len(cfg.ServerPIDs) > 0 && res.Ops > 0 {
		res.Extra["rss_before_bytes"] = float64(smp.server0.RSS)
		res.Extra["rss_after_bytes"] = float64(smp.server1.RSS)
		res.Extra["rss_per_watch_bytes"] = float64(smp.server1.RSS-smp.server0.RSS) / float64(res.Ops)
	}
	return res, nil
}

// watchEvery has every watcher set a data watch on every znode the load
// created (counts[i] by loading session i), InFlight at a time per
// watcher, and returns the latency histogram of those calls.
func watchEvery(ctx context.Context, cfg Config, l *layout, watchers []*Conn, counts []int) (*Histogram, error) {
	total := 0
	for _, n := range counts {
		total += n
	}
	// Flatten (session, index) once; every watcher walks the same list.
	paths := make([]string, 0, total)
	for i, n := range counts {
		for j := range n {
			paths = append(paths, znodePath(cfg, l, i, j))
		}
	}
	hists := make([]*Histogram, len(watchers))
	errs := make([]error, len(watchers))
	var wg sync.WaitGroup
	for w, c := range watchers {
		hists[w] = NewHistogram()
		wg.Go(func() {
			errs[w] = pipeline(ctx, c, len(paths), cfg.InFlight, func(j int) (jute.OpCode, jute.Record) {
				return jute.OpGetData, &jute.GetDataRequest{Path: paths[j], Watch: true}
			}, acceptOK, func(_ int, _ Reply, d time.Duration) { hists[w].RecordDuration(d) })
		})
	}
	wg.Wait()
	all := NewHistogram()
	for _, h := range hists {
		all.Merge(h)
	}
	return all, errors.Join(errs...)
}

// dialParallel opens n sessions, session i to cfg.addr(i), DialWorkers at
// a time. On failure it returns the sessions it opened with the error, so
// that the caller closes them.
func dialParallel(ctx context.Context, cfg Config, n int, opts DialOptions) ([]*Conn, error) {
	conns := make([]*Conn, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(cfg.DialWorkers, n) {
		wg.Go(func() {
			for i := range next {
				conns[i], errs[i] = Dial(ctx, cfg.addr(i), opts)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	open := make([]*Conn, 0, n)
	for _, c := range conns {
		if c != nil {
			open = append(open, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return open, fmt.Errorf("bench: open %d sessions: %w", n, err)
	}
	return open, nil
}
