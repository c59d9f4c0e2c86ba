package ops

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkserverd/zkserverd/server"
)

// PrometheusMetricsProvider is the metricsProvider.className that turns on
// the /metrics HTTP endpoint, as it does in ZooKeeper. With any other class
// name (ZooKeeper's default is DefaultMetricsProvider) the metrics are
// still registered in the server's registry, but not served over HTTP.
const PrometheusMetricsProvider = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"

// Keys of zoo.cfg read from conf.Config.Extra: the bind address of
// /metrics (default all interfaces) and whether the Go runtime and process
// collectors are exported (ZooKeeper's JVM collectors; default true).
const (
	metricsHostKey      = "metricsProvider.httpHost"
	metricsExportJVMKey = "metricsProvider.exportJvmInfo"
)

// ErrNoGatherer is returned by Start when /metrics is configured but
// Options.Registerer cannot be gathered and Options.Gatherer is nil.
var ErrNoGatherer = errors.New("ops: /metrics needs a Gatherer: Options.Registerer cannot be gathered")

// connectionPanicsMetric counts panics contained to one connection
// (contain.go); mntr shows it as zk_connection_panics.
const connectionPanicsMetric = "connection_panics"

// digestMismatchesMetric counts the checkpoints at which this member's
// digest differed from the leader's, under ZooKeeper's name; mntr shows it
// as zk_digest_mismatches_count.
const digestMismatchesMetric = "digest_mismatches_count"

// memoryRefusedWritesMetric counts the writes refused near the memory
// limit (server/memlimit.go); mntr shows it as zk_memory_refused_writes.
const memoryRefusedWritesMetric = "memory_refused_writes"

// summaryMaxAge is the window of the latency summaries' quantiles:
// ZooKeeper's Prometheus provider rotates its sketches every 60 seconds.
const summaryMaxAge = time.Minute

// serverMetrics holds the metrics that are observed rather than read from
// the existing statistics on each scrape. They are safe for concurrent
// use, so there is no lock.
type serverMetrics struct {
	readLatency   *latencySummary
	updateLatency *latencySummary
	fsyncTime     *latencySummary
}

// newServerMetrics builds the summaries under ZooKeeper's names: readlatency
// and updatelatency are its "advanced" summaries (median, p90, p99),
// fsynctime a "basic" one (median only). Values are milliseconds.
func newServerMetrics() *serverMetrics {
	advanced := []float64{0.5, 0.9, 0.99}
	return &serverMetrics{
		readLatency: newLatencySummary("readlatency",
			"Latency of read requests (including pings and sync), from arrival to reply, in milliseconds.", advanced, summaryMaxAge),
		updateLatency: newLatencySummary("updatelatency",
			"Latency of write requests, from arrival to reply, in milliseconds.", advanced, summaryMaxAge),
		fsyncTime: newLatencySummary("fsynctime",
			"Time of one fsync of the transaction log, in milliseconds.",
			[]float64{0.5}, summaryMaxAge),
	}
}

// gaugeSpec is one gauge read from the server's statistics on each scrape.
type gaugeSpec struct {
	name, help string
	value      func() float64
}

// gauges lists the gauges ZooKeeper registers (same names, and like
// ZooKeeper they are gauges even where the value only grows), plus
// slow_client_disconnects and the memory limit's, which are zkserverd's
// own.
func (o *Surfaces) gauges() []gaugeSpec {
	f := func(v int64) float64 { return float64(v) }
	stat := func(pick func(st server.Stats) int64) func() float64 {
		return func() float64 { return f(pick(o.st.Stats())) }
	}
	return []gaugeSpec{
		{"znode_count", "Number of znodes (ZooKeeper counts the root twice).", func() float64 { return float64(o.nodeCount()) }},
		{"watch_count", "Number of watches, data and child tables together.", func() float64 { return float64(o.st.Watches().Count()) }},
		{"ephemerals_count", "Number of ephemeral znodes.", func() float64 { return float64(o.st.Replica().Tree().EphemeralCount()) }},
		{"approximate_data_size", "Sum of path and data lengths of every znode, in bytes.", func() float64 { return f(o.st.Replica().Tree().ApproximateDataSize()) }},
		{"num_alive_connections", "Number of open client connections.", func() float64 { return float64(len(o.st.Connections())) }},
		{"outstanding_requests", "Requests received and not yet answered.", stat(func(st server.Stats) int64 { return st.Outstanding })},
		{"packets_received", "Request packets received since start or the last stat reset.", stat(func(st server.Stats) int64 { return st.PacketsReceived })},
		{"packets_sent", "Packets sent since start or the last stat reset.", stat(func(st server.Stats) int64 { return st.PacketsSent })},
		{"global_sessions", "Number of sessions.", func() float64 { return float64(o.st.Replica().Sessions().Len()) }},
		{"auth_failed_count", "Failed authentication attempts.", stat(func(st server.Stats) int64 { return st.AuthFailed })},
		{"uptime", "Time since the server started serving, in milliseconds.", func() float64 { return f(time.Since(o.st.Started()).Milliseconds()) }},
		{"min_latency", "Smallest request latency since the last stat reset, in milliseconds.", stat(func(st server.Stats) int64 { return st.Latency.Min })},
		{"avg_latency", "Mean request latency since the last stat reset, in milliseconds.", func() float64 { return o.st.Stats().Latency.Avg() }},
		{"max_latency", "Largest request latency since the last stat reset, in milliseconds.", stat(func(st server.Stats) int64 { return st.Latency.Max })},
		{"last_client_response_size", "Size of the last reply, in bytes.", stat(func(st server.Stats) int64 { return st.LastResponseSize })},
		{"min_client_response_size", "Smallest reply since the last stat reset, in bytes (-1 before any).", stat(func(st server.Stats) int64 { return st.MinResponseSize })},
		{"max_client_response_size", "Largest reply since the last stat reset, in bytes.", stat(func(st server.Stats) int64 { return st.MaxResponseSize })},
		{"open_file_descriptor_count", "Open file descriptors of the process.", func() float64 { open, _ := fdCounts(); return f(open) }},
		{"max_file_descriptor_count", "File descriptor limit of the process.", func() float64 { _, limit := fdCounts(); return f(limit) }},
		{"slow_client_disconnects", "Connections dropped because they did not read their notifications.", stat(func(st server.Stats) int64 { return st.SlowDisconnects })},
		{"memory_limit_bytes", "The memory limit growing writes are refused near, in bytes; 0: none (zkserverd's own).",
			stat(func(st server.Stats) int64 { return st.Memory.LimitBytes })},
		{"memory_live_heap_bytes", "The live heap at the last sample, in bytes: what is measured against the memory limit (zkserverd's own).",
			stat(func(st server.Stats) int64 { return st.Memory.LiveHeapBytes })},
		{"memory_refusing", "1 while writes that would grow the tree are refused near the memory limit, else 0 (zkserverd's own).",
			func() float64 { return boolGauge(o.st.Stats().Memory.Refusing) }},
	}
}

// counters are the series that only grow, read on each scrape.
func (o *Surfaces) counters() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: connectionPanicsMetric,
			Help: "Panics while serving one client's requests; each closed that connection only (zkserverd's own)."},
			func() float64 { return float64(o.st.Stats().ConnectionPanics) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: memoryRefusedWritesMetric,
			Help: "Writes refused with ThrottledOp because the memory limit was near (zkserverd's own)."},
			func() float64 { return float64(o.st.Stats().Memory.RefusedWrites) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: digestMismatchesMetric,
			Help: "Checkpoints at which this member's tree digest differed from the leader's."},
			func() float64 { return float64(o.st.Replica().DigestMismatches()) }),
	}
}

// boolGauge is a gauge's value for a state: 1 when on.
func boolGauge(on bool) float64 {
	if on {
		return 1
	}
	return 0
}

// registerMetrics registers the gauges, the summaries and, unless
// metricsProvider.exportJvmInfo is false, the Go runtime and process
// collectors. Runtime collectors a caller's registry already has are
// accepted as they are.
func (o *Surfaces) registerMetrics() error {
	var own []prometheus.Collector
	for _, g := range o.gauges() {
		own = append(own, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, g.value))
	}
	own = append(own, o.metrics.readLatency, o.metrics.updateLatency, o.metrics.fsyncTime)
	own = append(own, o.counters()...)
	var runtime []prometheus.Collector
	if exportRuntimeMetrics(o.cfg.Extra) {
		runtime = append(runtime, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range own {
		if err := o.registerer.Register(c); err != nil {
			return fmt.Errorf("ops: register metrics: %w", err)
		}
		o.registered = append(o.registered, c)
	}
	for _, c := range runtime {
		err := o.registerer.Register(c)
		var dup prometheus.AlreadyRegisteredError
		switch {
		case err == nil:
			o.registered = append(o.registered, c)
		case !errors.As(err, &dup):
			return fmt.Errorf("ops: register runtime metrics: %w", err)
		}
	}
	return nil
}

// exportRuntimeMetrics reads metricsProvider.exportJvmInfo (default true).
func exportRuntimeMetrics(extra map[string]string) bool {
	v, ok := extra[metricsExportJVMKey]
	if !ok {
		return true
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// startMetricsEndpoint serves the registry at /metrics on
// metricsProvider.httpHost:metricsProvider.httpPort.
func (o *Surfaces) startMetricsEndpoint() error {
	host := o.cfg.Extra[metricsHostKey]
	if host == "" {
		host = "0.0.0.0"
	}
	if o.gatherer == nil {
		return ErrNoGatherer
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(o.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	addr := net.JoinHostPort(host, strconv.Itoa(o.cfg.MetricsHTTPPort))
	ep, err := serveHTTP(addr, mux, 0, o.log)
	if err != nil {
		return fmt.Errorf("ops: metrics endpoint: %w", err)
	}
	o.mu.Lock()
	o.metricsEP = ep
	o.mu.Unlock()
	o.log.Info("serving metrics", "addr", ep.ln.Addr().String(), "path", "/metrics")
	return nil
}

// httpEndpoint is one HTTP listener and its server.
type httpEndpoint struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// serveHTTP listens on addr and serves h until close. idle bounds how long
// a connection may stay idle or take to send a request (0: one minute).
func serveHTTP(addr string, h http.Handler, idle time.Duration, log *slog.Logger) (*httpEndpoint, error) {
	if idle <= 0 {
		idle = time.Minute
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	ep := &httpEndpoint{
		ln: ln,
		srv: &http.Server{
			Handler:     h,
			ReadTimeout: idle,
			IdleTimeout: idle,
			ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(ep.done)
		if err := ep.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("http endpoint stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return ep, nil
}

// addr returns the bound address (nil for a nil endpoint).
func (ep *httpEndpoint) addr() net.Addr {
	if ep == nil {
		return nil
	}
	return ep.ln.Addr()
}

// close stops the server at once and waits for its accept loop.
func (ep *httpEndpoint) close() {
	if ep == nil {
		return
	}
	ep.srv.Close()
	<-ep.done
}
