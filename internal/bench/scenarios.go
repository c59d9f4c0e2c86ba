package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// notifyTimeout bounds the wait for one round of watch notifications.
const notifyTimeout = 10 * time.Second

// fanout collects the notifications of one watch round. Guarded by mu.
type fanout struct {
	path string
	want int

	mu          sync.Mutex
	got         int
	first, last time.Time
	done        chan struct{}
}

// reset starts a new round and returns the channel closed when all
// watchers have been notified.
func (f *fanout) reset() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = 0
	f.done = make(chan struct{})
	return f.done
}

// event is every watcher's OnEvent.
func (f *fanout) event(ev jute.WatcherEvent, at time.Time) {
	if ev.Type != jute.EventNodeDataChanged || ev.Path != f.path {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got++
	if f.got == 1 {
		f.first = at
	}
	f.last = at
	if f.got == f.want {
		close(f.done)
	}
}

func (f *fanout) times() (first, last time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first, f.last
}

// runWatch measures watch fan-out: Watchers sessions set a data watch on
// one znode, another session changes it, and the time from sending
// setData to the arrival of the last notification is recorded. Each round
// re-arms the watches first (not timed).
func runWatch(ctx context.Context, cfg Config) (*Result, error) {
	path := cfg.Root + "/w-" + cfg.RunID
	target := path
	if cfg.Recursive {
		target = path + "/c"
	}
	if err := withConn(ctx, cfg, func(c *Conn) error { return ensurePath(ctx, c, target) }); err != nil {
		return nil, err
	}
	f := &fanout{path: target, want: cfg.Watchers}
	opts := cfg.dialOptions()
	opts.OnEvent = f.event
	watchers, err := dialParallel(ctx, cfg, cfg.Watchers, opts)
	defer func() { closeAll(watchers) }()
	if err != nil {
		return nil, err
	}
	if cfg.Recursive {
		if err := addRecursiveWatches(ctx, watchers, path); err != nil {
			return nil, err
		}
	}
	writer, err := Dial(ctx, cfg.addr(0), cfg.dialOptions())
	if err != nil {
		return nil, err
	}
	defer closeAll([]*Conn{writer})

	win := newWindow(cfg)
	res := newResult(cfg, win.base)
	res.Sessions, res.InFlight = cfg.Watchers+1, 1
	lastH, firstH := NewHistogram(), NewHistogram()
	stop := make(chan struct{})
	var loopErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		loopErr = watchRounds(ctx, stop, win, f, watchers, !cfg.Recursive, writer, cfg.DataSize, firstH, lastH)
	})
	smp := newSampler(cfg)
	ctxErr := waitWindow(ctx, win, smp)
	close(stop)
	wg.Wait()
	if err := errors.Join(ctxErr, loopErr); err != nil {
		return nil, err
	}
	res.Ops = lastH.Count()
	res.Seconds = cfg.Duration.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.Latency = lastH.Summarize()
	first := firstH.Summarize()
	res.PerKind = map[string]LatencySummary{"last-notification": res.Latency, "first-notification": first}
	res.Extra["watchers"] = float64(cfg.Watchers)
	if cfg.Recursive {
		res.Extra["recursive"] = 1
	}
	res.Extra["notifications_per_sec"] = res.OpsPerSec * float64(cfg.Watchers)
	res.Extra["first_notification_p50_us"] = first.P50
	return res, smp.fill(ctx, res)
}

// watchRounds runs rounds until stop closes, recording the rounds that lie
// inside the measured window. With rearm every round first sets a one-time
// data watch from every watcher (persistent watches need none).
func watchRounds(ctx context.Context, stop <-chan struct{}, win window, f *fanout, watchers []*Conn, rearm bool,
	writer *Conn, dataSize int, firstH, lastH *Histogram) error {
	payload := make([]byte, dataSize)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if rearm {
			if err := armWatches(ctx, watchers, f.path); err != nil {
				return err
			}
		}
		done := f.reset()
		sent := time.Now()
		_, err := writer.Call(ctx, jute.OpSetData, &jute.SetDataRequest{Path: f.path, Data: payload, Version: -1}, nil)
		if err != nil {
			return fmt.Errorf("bench: setData %s: %w", f.path, err)
		}
		select {
		case <-done:
		case <-time.After(notifyTimeout):
			return fmt.Errorf("bench: not every watcher was notified within %v", notifyTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		first, last := f.times()
		if win.contains(sent, last) {
			firstH.RecordDuration(first.Sub(sent))
			lastH.RecordDuration(last.Sub(sent))
		}
	}
}

// armWatches sets a data watch on path from every watcher and waits for
// all the replies.
func armWatches(ctx context.Context, watchers []*Conn, path string) error {
	return sendAll(ctx, watchers, jute.OpGetData, &jute.GetDataRequest{Path: path, Watch: true})
}

// addRecursiveWatches registers a persistent recursive watch on path from
// every watcher.
func addRecursiveWatches(ctx context.Context, watchers []*Conn, path string) error {
	return sendAll(ctx, watchers, jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: jute.AddWatchPersistentRecursive})
}

// sendAll sends one request on every connection and waits for all the
// replies, returning the first failure.
func sendAll(ctx context.Context, watchers []*Conn, op jute.OpCode, req jute.Record) error {
	errs := make(chan error, len(watchers))
	for _, c := range watchers {
		err := c.Send(op, req, func(r Reply) {
			if r.Err != jute.OK {
				errs <- fmt.Errorf("bench: %v: %w", op, r.Err)
				return
			}
			errs <- nil
		})
		if err != nil {
			return err
		}
	}
	var first error
	for range watchers {
		select {
		case err := <-errs:
			first = cmpOr(first, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// connectStats is one connect worker's tally; only its goroutine writes it.
type connectStats struct {
	total, connect *Histogram
	errs           map[jute.Code]int64
}

// runConnect measures session churn: Sessions goroutines each open a
// session (TCP connect + handshake), close it (closeSession) and start
// again. Latency is the whole cycle; an op is one cycle.
func runConnect(ctx context.Context, cfg Config) (*Result, error) {
	win := newWindow(cfg)
	res := newResult(cfg, win.base)
	res.InFlight = 1
	stats := make([]*connectStats, cfg.Sessions)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range stats {
		stats[i] = &connectStats{total: NewHistogram(), connect: NewHistogram(), errs: map[jute.Code]int64{}}
		wg.Go(func() { connectLoop(ctx, cfg, cfg.addr(i), win, stop, stats[i]) })
	}
	smp := newSampler(cfg)
	ctxErr := waitWindow(ctx, win, smp)
	close(stop)
	wg.Wait()
	if ctxErr != nil {
		return nil, ctxErr
	}
	total, connect := NewHistogram(), NewHistogram()
	errs := map[jute.Code]int64{}
	for _, s := range stats {
		total.Merge(s.total)
		connect.Merge(s.connect)
		for c, n := range s.errs {
			errs[c] += n
		}
	}
	res.Ops = total.Count()
	res.Seconds = cfg.Duration.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.Latency = total.Summarize()
	res.PerKind = map[string]LatencySummary{"connect+close": res.Latency, "connect": connect.Summarize()}
	res.Errors = errorCounts(errs)
	return res, smp.fill(ctx, res)
}

// connectLoop is one connect worker.
func connectLoop(ctx context.Context, cfg Config, addr string, win window, stop <-chan struct{}, s *connectStats) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		start := time.Now()
		connected, err := ConnectCycle(ctx, addr, cfg.dialOptions())
		if connected.IsZero() {
			s.errs[jute.ConnectionLoss]++
			if sleepUntil(ctx, time.Now().Add(10*time.Millisecond)) != nil {
				return
			}
			continue
		}
		end := time.Now()
		if !win.contains(start, end) {
			continue
		}
		var code jute.Code
		if errors.As(err, &code) {
			s.errs[code]++
			continue
		} else if err != nil {
			s.errs[jute.ConnectionLoss]++
			continue
		}
		s.total.RecordDuration(end.Sub(start))
		s.connect.RecordDuration(connected.Sub(start))
	}
}

// runZnodes loads Znodes znodes of DataSize bytes (Sessions sessions,
// InFlight each) and reports the load rate and, given ServerPIDs, the
// server's resident memory per znode: its growth from a sample taken just
// before the load (rss_per_znode_bytes; on a freshly started server that is
// the empty server's footprint) to one taken Settle after it, and the whole
// RSS after the load divided by the znodes (rss_after_per_znode_bytes), an
// upper bound that garbage-collector sizing cannot drive negative. The znodes stay unless Cleanup is set, so that a restart
// measured next has them to recover.
func runZnodes(ctx context.Context, cfg Config) (*Result, error) {
	l := newLayout(cfg)
	if err := setupZnodeDirs(ctx, cfg, &l); err != nil {
		return nil, err
	}
	conns, err := dialAll(ctx, cfg, cfg.Sessions)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	smp := newSampler(cfg)
	smp.sample(ctx, false)
	start := time.Now()
	res := newResult(cfg, start)
	counts, hists, err := loadZnodes(ctx, cfg, &l, conns)
	elapsed := time.Since(start)
	if err != nil {
		return nil, err
	}
	if err := sleepUntil(ctx, time.Now().Add(cfg.Settle)); err != nil {
		return nil, err
	}
	smp.sample(ctx, true)
	all := NewHistogram()
	for _, h := range hists {
		all.Merge(h)
	}
	res.Ops = all.Count()
	res.Seconds = elapsed.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.Latency = all.Summarize()
	res.Extra["znodes"] = float64(cfg.Znodes)
	if cfg.Flat {
		res.Extra["flat"] = 1
	}
	if err := smp.fill(ctx, res); err != nil {
		return nil, err
	}
	if len(cfg.ServerPIDs) > 0 {
		res.Extra["rss_before_bytes"] = float64(smp.server0.RSS)
		res.Extra["rss_after_bytes"] = float64(smp.server1.RSS)
		res.Extra["rss_per_znode_bytes"] = float64(smp.server1.RSS-smp.server0.RSS) / float64(cfg.Znodes)
		res.Extra["rss_after_per_znode_bytes"] = float64(smp.server1.RSS) / float64(cfg.Znodes)
	}
	if cfg.Cleanup {
		if err := cleanupZnodes(ctx, cfg, &l, counts); err != nil {
			return res, err
		}
	}
	return res, nil
}

// znodePath names the j-th znode session i creates in the znodes scenario:
// in its own directory, or with Flat in the one shared parent.
func znodePath(cfg Config, l *layout, i, j int) string {
	if cfg.Flat {
		return fmt.Sprintf("%s/s%dn%d", l.flatDir(), i, j)
	}
	return fmt.Sprintf("%s/n%d", l.sessionDir(i), j)
}

// setupZnodeDirs creates the parents the znodes scenario creates under.
func setupZnodeDirs(ctx context.Context, cfg Config, l *layout) error {
	if !cfg.Flat {
		return setupSessionDirs(ctx, cfg, l, cfg.Sessions)
	}
	return withConn(ctx, cfg, func(c *Conn) error { return ensurePath(ctx, c, l.flatDir()) })
}

// cleanupZnodes deletes what the znodes scenario created.
func cleanupZnodes(ctx context.Context, cfg Config, l *layout, counts []int) error {
	if !cfg.Flat {
		return cleanupRun(ctx, cfg, l, counts)
	}
	return withConn(ctx, cfg, func(c *Conn) error {
		for i, n := range counts {
			err := pipeline(ctx, c, n, 256, func(j int) (jute.OpCode, jute.Record) {
				return jute.OpDelete, &jute.DeleteRequest{Path: znodePath(cfg, l, i, j), Version: -1}
			}, acceptNoNode, nil)
			if err != nil {
				return fmt.Errorf("bench: cleanup %s: %w", l.flatDir(), err)
			}
		}
		for _, p := range []string{l.flatDir(), l.runDir} {
			_, err := c.Call(ctx, jute.OpDelete, &jute.DeleteRequest{Path: p, Version: -1}, nil)
			if err != nil && !errors.Is(err, jute.NoNode) {
				return fmt.Errorf("bench: cleanup %s: %w", p, err)
			}
		}
		return nil
	})
}

// loadZnodes creates the znodes, session i creating counts[i] of them in
// its directory, and returns each session's latency histogram.
func loadZnodes(ctx context.Context, cfg Config, l *layout, conns []*Conn) ([]int, []*Histogram, error) {
	n := len(conns)
	counts := make([]int, n)
	hists := make([]*Histogram, n)
	errs := make([]error, n)
	payload := make([]byte, cfg.DataSize)
	var wg sync.WaitGroup
	for i, c := range conns {
		counts[i] = cfg.Znodes / n
		if i < cfg.Znodes%n {
			counts[i]++
		}
		hists[i] = NewHistogram()
		wg.Go(func() {
			errs[i] = pipeline(ctx, c, counts[i], cfg.InFlight, func(j int) (jute.OpCode, jute.Record) {
				return createReq(znodePath(cfg, l, i, j), payload)
			}, acceptOK, func(_ int, _ Reply, d time.Duration) { hists[i].RecordDuration(d) })
		})
	}
	wg.Wait()
	return counts, hists, errors.Join(errs...)
}

// ProbeInterval is how often WaitReady retries.
const ProbeInterval = 10 * time.Millisecond

// WaitReady polls the first server until a new session can read "/"
// (connect, getData, close) and returns the time from since until that
// success, as a Result named "restart" with Extra["ready_ms"]. With since
// set to the moment a server process was started, that is its restart
// time. It gives up when ctx ends.
func WaitReady(ctx context.Context, cfg Config, since time.Time) (*Result, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("bench: addrs: at least one server address is needed")
	}
	opts := cfg.dialOptions()
	opts.DialTimeout = time.Second
	var attempts int
	var last error
	for {
		attempts++
		if last = probeOnce(ctx, cfg.addr(0), opts); last == nil {
			break
		}
		if err := sleepUntil(ctx, time.Now().Add(ProbeInterval)); err != nil {
			return nil, fmt.Errorf("bench: %s not ready after %d attempts (last: %v): %w", cfg.addr(0), attempts, last, err)
		}
	}
	ready := time.Since(since)
	res := newResult(cfg, since)
	res.Name, res.Workload = "restart", "restart"
	res.Sessions, res.InFlight = 1, 1
	res.Seconds = ready.Seconds()
	res.Extra["ready_ms"] = float64(ready) / float64(time.Millisecond)
	res.Extra["probe_attempts"] = float64(attempts)
	return res, nil
}

// probeOnce opens a session, reads "/" and closes the session.
func probeOnce(ctx context.Context, addr string, opts DialOptions) error {
	c, err := Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer closeAll([]*Conn{c})
	callCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = c.Call(callCtx, jute.OpGetData, &jute.GetDataRequest{Path: "/"}, nil)
	return err
}
