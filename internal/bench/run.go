package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// drainTimeout bounds the wait for outstanding replies after a run.
const drainTimeout = 30 * time.Second

// Run executes one benchmark run described by cfg.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var res *Result
	var err error
	switch cfg.Workload {
	case ScenarioWatch:
		res, err = runWatch(ctx, cfg)
	case ScenarioConnect:
		res, err = runConnect(ctx, cfg)
	case ScenarioZnodes:
		res, err = runZnodes(ctx, cfg)
	case ScenarioWatchMem:
		res, err = runWatchMem(ctx, cfg)
	default:
		res, err = runOps(ctx, cfg)
	}
	if err == nil && res.Ops == 0 {
		// A server that accepts sessions but never answers (an ensemble
		// still settling) is a failed run, not one with no figures.
		err = fmt.Errorf("bench: %s: no operation completed in the measured %v", cfg.Workload, cfg.Duration)
	}
	return res, err
}

// newResult fills the fields every run reports.
func newResult(cfg Config, started time.Time) *Result {
	return &Result{
		Label:       cfg.Label,
		Name:        cfg.Name,
		Workload:    cfg.Workload,
		Addrs:       cfg.Addrs,
		Sessions:    cfg.Sessions,
		InFlight:    cfg.InFlight,
		DataSize:    cfg.DataSize,
		Keys:        cfg.Keys,
		ReadPercent: cfg.ReadPercent,
		Started:     started,
		Errors:      map[string]int64{},
		Extra:       map[string]float64{},
	}
}

// window is the measured interval as offsets from a base time. A reply is
// counted when its request was sent at or after from and it arrived by to.
type window struct {
	base     time.Time
	from, to time.Duration
}

func newWindow(cfg Config) window {
	return window{base: time.Now(), from: cfg.Warmup, to: cfg.Warmup + cfg.Duration}
}

func (w window) contains(sent, received time.Time) bool {
	return sent.Sub(w.base) >= w.from && received.Sub(w.base) <= w.to
}

// sampler reads the server processes and this process at the start and
// end of the measured interval, and has the servers profiled over it when
// the run asks for profiles.
type sampler struct {
	cfg              Config
	prof             *profiler
	server0, server1 ProcSample
	client0, client1 time.Duration
	serverErr        error
}

func newSampler(cfg Config) *sampler {
	return &sampler{cfg: cfg, prof: newProfiler(cfg)}
}

// sample takes the start (end false) or end sample. The start also starts
// the CPU profiles, which cover the measured period.
func (s *sampler) sample(ctx context.Context, end bool) {
	if !end {
		s.prof.startCPU(ctx)
	}
	cpu := selfCPU()
	var p ProcSample
	var err error
	if len(s.cfg.ServerPIDs) > 0 {
		p, err = ReadProcs(s.cfg.ProcRoot, s.cfg.ServerPIDs)
		if err != nil && s.serverErr == nil {
			s.serverErr = err
		}
	}
	if end {
		s.client1, s.server1 = cpu, p
		return
	}
	s.client0, s.server0 = cpu, p
}

// fill adds the sampled usage to r, and the profiles once they are saved
// (a failed fetch is a warning in r.Profiles, not an error).
func (s *sampler) fill(ctx context.Context, r *Result) error {
	r.Profiles = s.prof.finish(ctx)
	r.ClientCPUSeconds = (s.client1 - s.client0).Seconds()
	if len(s.cfg.ServerPIDs) == 0 {
		return nil
	}
	if s.serverErr != nil {
		return s.serverErr
	}
	r.Server = newServerUsage(s.cfg.ServerPIDs, s.server0, s.server1, r.Ops)
	return nil
}

// selfCPU returns this process's user plus system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// worker is one session of an operation workload. The issuing loop runs
// on its own goroutine; the fields after "reader side" are touched only by
// reply callbacks, which all run on the connection's reader goroutine, and
// are read by Run after the worker has drained.
type worker struct {
	conn *Conn
	mix  Mix
	ops  opBuilder
	win  window

	// reader side
	hists  [numKinds]*Histogram
	errs   map[jute.Code]int64
	counts int64
}

func newWorker(i int, c *Conn, cfg Config, l *layout, mix Mix, win window) *worker {
	w := &worker{
		conn: c,
		mix:  mix,
		win:  win,
		errs: map[jute.Code]int64{},
		ops: opBuilder{
			l:       l,
			rng:     rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			payload: make([]byte, cfg.DataSize),
			dir:     l.sessionDir(i),
		},
	}
	for k := range w.hists {
		w.hists[k] = NewHistogram()
	}
	return w
}

// loop keeps inFlight requests outstanding until stop closes, then waits
// for the replies still due.
func (w *worker) loop(inFlight int, stop <-chan struct{}) {
	free := make(chan struct{}, inFlight)
	for range inFlight {
		free <- struct{}{}
	}
	for running := true; running; {
		select {
		case <-stop:
			running = false
			continue
		case <-w.conn.Done():
			return
		case <-free:
		}
		kind := w.mix.Pick(w.ops.rng)
		op, req := w.ops.build(kind)
		sent := time.Now()
		err := w.conn.Send(op, req, func(r Reply) {
			w.complete(kind, op, sent, r)
			free <- struct{}{}
		})
		if err != nil {
			return
		}
	}
	w.drain(free, inFlight)
}

// drain waits until every token is back, the connection fails, or
// drainTimeout passes (then the connection is aborted).
func (w *worker) drain(free chan struct{}, inFlight int) {
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	for range inFlight {
		select {
		case <-free:
		case <-w.conn.Done():
			return
		case <-timer.C:
			w.conn.Abort()
			return
		}
	}
}

// complete records one reply (reader goroutine).
func (w *worker) complete(kind OpKind, op jute.OpCode, sent time.Time, r Reply) {
	if !w.win.contains(sent, r.Received) {
		return
	}
	if code := replyCode(op, r); code != jute.OK {
		w.errs[code]++
		return
	}
	w.counts++
	w.hists[kind].RecordDuration(r.Received.Sub(sent))
}

// runOps runs an operation workload.
func runOps(ctx context.Context, cfg Config) (*Result, error) {
	mix, err := WorkloadMix(cfg.Workload, cfg.ReadPercent)
	if err != nil {
		return nil, err
	}
	l := newLayout(cfg)
	if err := setupKeys(ctx, cfg, &l); err != nil {
		return nil, err
	}
	if err := setupSessionDirs(ctx, cfg, &l, cfg.Sessions); err != nil {
		return nil, err
	}
	conns, err := dialAll(ctx, cfg, cfg.Sessions)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)

	cfg.Logger.Info("running", "workload", cfg.Workload, "sessions", cfg.Sessions, "inflight", cfg.InFlight,
		"warmup", cfg.Warmup, "duration", cfg.Duration)
	win := newWindow(cfg)
	res := newResult(cfg, win.base)
	workers := make([]*worker, len(conns))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		workers[i] = newWorker(i, c, cfg, &l, mix, win)
		wg.Go(func() { workers[i].loop(cfg.InFlight, stop) })
	}
	smp := newSampler(cfg)
	ctxErr := waitWindow(ctx, win, smp)
	close(stop)
	wg.Wait()
	if ctxErr != nil {
		return nil, ctxErr
	}
	collectOps(res, workers, mix, cfg.Duration)
	if err := smp.fill(ctx, res); err != nil {
		return nil, err
	}
	if cfg.Cleanup {
		created := make([]int, len(workers))
		for i, w := range workers {
			created[i] = w.ops.created
		}
		if err := cleanupRun(ctx, cfg, &l, created); err != nil {
			return res, err
		}
	}
	return res, nil
}

// waitWindow sleeps through the warm-up, samples, sleeps through the
// measured time and samples again.
func waitWindow(ctx context.Context, win window, smp *sampler) error {
	if err := sleepUntil(ctx, win.base.Add(win.from)); err != nil {
		return err
	}
	smp.sample(ctx, false)
	if err := sleepUntil(ctx, win.base.Add(win.to)); err != nil {
		return err
	}
	smp.sample(ctx, true)
	return nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// collectOps merges the workers' counts and histograms into res.
func collectOps(res *Result, workers []*worker, mix Mix, d time.Duration) {
	all := NewHistogram()
	perKind := map[OpKind]*Histogram{}
	errs := map[jute.Code]int64{}
	for _, w := range workers {
		res.Ops += w.counts
		for _, k := range mix.Kinds() {
			if perKind[k] == nil {
				perKind[k] = NewHistogram()
			}
			perKind[k].Merge(w.hists[k])
			all.Merge(w.hists[k])
		}
		for c, n := range w.errs {
			errs[c] += n
		}
		if err := w.conn.Err(); err != nil && !errors.Is(err, ErrClosed) {
			errs[jute.ConnectionLoss]++
		}
	}
	res.Seconds = d.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.Latency = all.Summarize()
	res.PerKind = map[string]LatencySummary{}
	for k, h := range perKind {
		res.PerKind[k.String()] = h.Summarize()
	}
	res.Errors = errorCounts(errs)
}

// dialAll opens n sessions, session i to cfg.addr(i).
func dialAll(ctx context.Context, cfg Config, n int) ([]*Conn, error) {
	conns := make([]*Conn, 0, n)
	for i := range n {
		c, err := Dial(ctx, cfg.addr(i), cfg.dialOptions())
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("bench: session %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// closeAll ends every session, in parallel.
func closeAll(conns []*Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.Close(ctx) })
	}
	wg.Wait()
}

// withConn runs fn on a fresh session to the first server.
func withConn(ctx context.Context, cfg Config, fn func(*Conn) error) error {
	c, err := Dial(ctx, cfg.addr(0), cfg.dialOptions())
	if err != nil {
		return err
	}
	defer closeAll([]*Conn{c})
	return fn(c)
}

// pipeline issues n requests made by gen, at most window at a time, and
// returns the first reply whose code accept refuses. onReply, if set, is
// called on the reader goroutine with each accepted reply and its latency;
// it may keep nothing of r.Body.
func pipeline(ctx context.Context, c *Conn, n, window int, gen func(i int) (jute.OpCode, jute.Record),
	accept func(jute.Code) bool, onReply func(i int, r Reply, latency time.Duration)) error {
	free := make(chan struct{}, window)
	for range window {
		free <- struct{}{}
	}
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	for i := range n {
		select {
		case <-free:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Done():
			return fmt.Errorf("bench: connection lost: %w", c.Err())
		}
		op, req := gen(i)
		sent := time.Now()
		err := c.Send(op, req, func(r Reply) {
			if code := replyCode(op, r); !accept(code) {
				fail(fmt.Errorf("bench: %v: %w", op, code))
			} else if onReply != nil {
				onReply(i, r, r.Received.Sub(sent))
			}
			free <- struct{}{}
		})
		if err != nil {
			return err
		}
	}
	for range window {
		select {
		case <-free:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Done():
			return fmt.Errorf("bench: connection lost: %w", c.Err())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

func acceptOK(c jute.Code) bool     { return c == jute.OK }
func acceptExists(c jute.Code) bool { return c == jute.OK || c == jute.NodeExists }
func acceptNoNode(c jute.Code) bool { return c == jute.OK || c == jute.NoNode }

// createReq is a persistent create with open ACL.
func createReq(path string, data []byte) (jute.OpCode, jute.Record) {
	return jute.OpCreate, &jute.CreateRequest{Path: path, Data: data, ACL: jute.OpenACLUnsafe}
}

// ensurePath creates p and its missing ancestors.
func ensurePath(ctx context.Context, c *Conn, p string) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := range parts {
		cur := "/" + strings.Join(parts[:i+1], "/")
		op, req := createReq(cur, nil)
		if _, err := c.Call(ctx, op, req, nil); err != nil && !errors.Is(err, jute.NodeExists) {
			return fmt.Errorf("bench: create %s: %w", cur, err)
		}
	}
	return nil
}

// setupKeys creates the key directories and keys unless the keys parent
// already carries this shape's marker.
func setupKeys(ctx context.Context, cfg Config, l *layout) error {
	return withConn(ctx, cfg, func(c *Conn) error {
		if err := ensurePath(ctx, c, l.keysParent()); err != nil {
			return err
		}
		var got jute.GetDataResponse
		if _, err := c.Call(ctx, jute.OpGetData, &jute.GetDataRequest{Path: l.keysParent()}, &got); err != nil {
			return fmt.Errorf("bench: read %s: %w", l.keysParent(), err)
		}
		want := l.marker()
		if string(got.Data) == string(want) {
			return nil
		}
		cfg.Logger.Info("creating keys", "keys", len(l.keys), "dirs", len(l.dirs))
		payload := make([]byte, l.dataLen)
		err := pipeline(ctx, c, len(l.dirs), 256, func(i int) (jute.OpCode, jute.Record) {
			return createReq(l.dirs[i], nil)
		}, acceptExists, nil)
		if err == nil {
			err = pipeline(ctx, c, len(l.keys), 256, func(i int) (jute.OpCode, jute.Record) {
				return jute.OpSetData, &jute.SetDataRequest{Path: l.keys[i], Data: payload, Version: -1}
			}, func(code jute.Code) bool { return code == jute.OK || code == jute.NoNode }, nil)
		}
		if err == nil {
			err = pipeline(ctx, c, len(l.keys), 256, func(i int) (jute.OpCode, jute.Record) {
				return createReq(l.keys[i], payload)
			}, acceptExists, nil)
		}
		if err != nil {
			return fmt.Errorf("bench: create keys: %w", err)
		}
		req := &jute.SetDataRequest{Path: l.keysParent(), Data: want, Version: -1}
		_, err = c.Call(ctx, jute.OpSetData, req, nil)
		return err
	})
}

// setupSessionDirs creates the run directory and one directory per session.
func setupSessionDirs(ctx context.Context, cfg Config, l *layout, n int) error {
	return withConn(ctx, cfg, func(c *Conn) error {
		if err := ensurePath(ctx, c, l.runDir); err != nil {
			return err
		}
		return pipeline(ctx, c, n, 256, func(i int) (jute.OpCode, jute.Record) {
			return createReq(l.sessionDir(i), nil)
		}, acceptExists, nil)
	})
}

// cleanupRun deletes what the sessions created (created[i] znodes named
// n0.. in session i's directory), their directories and the run directory.
func cleanupRun(ctx context.Context, cfg Config, l *layout, created []int) error {
	return withConn(ctx, cfg, func(c *Conn) error {
		for i, n := range created {
			dir := l.sessionDir(i)
			err := pipeline(ctx, c, n+1, 256, func(j int) (jute.OpCode, jute.Record) {
				p := dir
				if j < n {
					p = fmt.Sprintf("%s/n%d", dir, j)
				}
				return jute.OpDelete, &jute.DeleteRequest{Path: p, Version: -1}
			}, acceptNoNode, nil)
			if err != nil {
				return fmt.Errorf("bench: cleanup %s: %w", dir, err)
			}
		}
		_, err := c.Call(ctx, jute.OpDelete, &jute.DeleteRequest{Path: l.runDir, Version: -1}, nil)
		if err != nil && !errors.Is(err, jute.NoNode) {
			return fmt.Errorf("bench: cleanup %s: %w", l.runDir, err)
		}
		return nil
	})
}
