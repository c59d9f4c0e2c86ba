package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkserverd/zkserverd/jute"
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
var ErrNoGatherer = errors.New("server: /metrics needs a Gatherer: Options.Registerer cannot be gathered")

// connectionPanicsMetric counts panics contained to one connection
// (contain.go); mntr shows it as zk_connection_panics.
const connectionPanicsMetric = "connection_panics"

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

// observeRequest records one answered request: writes (requests that
// become transactions) in updatelatency, everything else in readlatency,
// as ZooKeeper splits them. It is meant to be called where the server
// records its srvr latency.
func (s *Server) observeRequest(op jute.OpCode, d time.Duration) {
	if s.ops == nil || op == jute.OpAuth || op == jute.OpSASL {
		return
	}
	if op.IsWrite() {
		s.ops.metrics.updateLatency.Observe(d)
		return
	}
	s.ops.metrics.readLatency.Observe(d)
}

// observeLogSync records one fsync of the log (fsynctime, in mntr and
// /metrics). It runs on the log's syncing goroutines.
func (s *Server) observeLogSync(d time.Duration) {
	s.stats.fsyncTime.add(d)
	if s.ops == nil {
		return
	}
	s.ops.metrics.fsyncTime.Observe(d)
}

// gaugeSpec is one gauge read from the server's statistics on each scrape.
type gaugeSpec struct {
	name, help string
	value      func() float64
}

// gauges lists the gauges ZooKeeper registers (same names, and like
// ZooKeeper they are gauges even where the value only grows), plus
// slow_client_disconnects, which is zkserverd's own.
func (s *Server) gauges() []gaugeSpec {
	f := func(v int64) float64 { return float64(v) }
	latency := func(pick func(min int64, avg float64, max int64) float64) func() float64 {
		return func() float64 {
			min, avg, max, _ := s.stats.latency.snapshot()
			return pick(min, avg, max)
		}
	}
	return []gaugeSpec{
		{"znode_count", "Number of znodes (ZooKeeper counts the root twice).", func() float64 { return float64(s.nodeCount()) }},
		{"watch_count", "Number of watches, data and child tables together.", func() float64 { return float64(s.watches.Count()) }},
		{"ephemerals_count", "Number of ephemeral znodes.", func() float64 { return float64(s.node.Tree().EphemeralCount()) }},
		{"approximate_data_size", "Sum of path and data lengths of every znode, in bytes.", func() float64 { return f(s.node.Tree().ApproximateDataSize()) }},
		{"num_alive_connections", "Number of open client connections.", func() float64 { return float64(len(s.connections())) }},
		{"outstanding_requests", "Requests received and not yet answered.", func() float64 { return f(s.stats.outstanding.Load()) }},
		{"packets_received", "Request packets received since start or the last stat reset.", func() float64 { return f(s.stats.packetsReceived.Load()) }},
		{"packets_sent", "Packets sent since start or the last stat reset.", func() float64 { return f(s.stats.packetsSent.Load()) }},
		{"global_sessions", "Number of sessions.", func() float64 { return float64(s.node.Sessions().Len()) }},
		{"auth_failed_count", "Failed authentication attempts.", func() float64 { return f(s.stats.authFailed.Load()) }},
		{"uptime", "Time since the server started serving, in milliseconds.", func() float64 { return f(time.Since(s.started).Milliseconds()) }},
		{"min_latency", "Smallest request latency since the last stat reset, in milliseconds.", latency(func(min int64, _ float64, _ int64) float64 { return float64(min) })},
		{"avg_latency", "Mean request latency since the last stat reset, in milliseconds.", latency(func(_ int64, avg float64, _ int64) float64 { return avg })},
		{"max_latency", "Largest request latency since the last stat reset, in milliseconds.", latency(func(_ int64, _ float64, max int64) float64 { return float64(max) })},
		{"last_client_response_size", "Size of the last reply, in bytes.", func() float64 { return f(s.stats.lastRespSize.Load()) }},
		{"min_client_response_size", "Smallest reply since the last stat reset, in bytes (-1 before any).", func() float64 { return f(s.stats.minRespSize.Load()) }},
		{"max_client_response_size", "Largest reply since the last stat reset, in bytes.", func() float64 { return f(s.stats.maxRespSize.Load()) }},
		{"open_file_descriptor_count", "Open file descriptors of the process.", func() float64 { open, _ := fdCounts(); return f(open) }},
		{"max_file_descriptor_count", "File descriptor limit of the process.", func() float64 { _, limit := fdCounts(); return f(limit) }},
		{"slow_client_disconnects", "Connections dropped because they did not read their notifications.", func() float64 { return f(s.stats.slowDisconnects.Load()) }},
	}
}

// operations holds the operator surfaces: the metrics registry, the
// /metrics endpoint and the AdminServer. The registry and the summaries
// exist from New; Start registers the collectors and opens the listeners,
// Close removes both. mu guards the fields below it.
type operations struct {
	registerer prometheus.Registerer
	gatherer   prometheus.Gatherer
	metrics    *serverMetrics

	mu         sync.Mutex
	registered []prometheus.Collector
	metricsEP  *httpEndpoint
	adminEP    *httpEndpoint
}

// newOperations prepares the operator surfaces. Without a Registerer the
// server gets a registry of its own (so several servers can share a
// process); without a Gatherer, /metrics serves the Registerer when it can
// be gathered too.
func newOperations(reg prometheus.Registerer, gatherer prometheus.Gatherer) *operations {
	if reg == nil {
		own := prometheus.NewRegistry()
		reg, gatherer = own, own
	}
	if gatherer == nil {
		gatherer, _ = reg.(prometheus.Gatherer)
	}
	return &operations{registerer: reg, gatherer: gatherer, metrics: newServerMetrics()}
}

// Gatherer returns what /metrics serves: the server's own registry unless
// Options gave one (nil when Options.Registerer cannot be gathered and no
// Gatherer was given).
func (s *Server) Gatherer() prometheus.Gatherer { return s.ops.gatherer }

// MetricsAddr returns the address of the /metrics endpoint, or nil when it
// is not served (see PrometheusMetricsProvider).
func (s *Server) MetricsAddr() net.Addr {
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	return s.ops.metricsEP.addr()
}

// AdminAddr returns the AdminServer's address, or nil when it is disabled
// (admin.enableServer=false).
func (s *Server) AdminAddr() net.Addr {
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	return s.ops.adminEP.addr()
}

// startOperations registers the metrics and opens /metrics and the
// AdminServer as configured. It fails when the metrics cannot be
// registered or /metrics (which must be asked for) cannot listen; the
// caller then closes the server. ZooKeeper also exits when its AdminServer
// cannot start, but that one is on by default on port 8080, so zkserverd
// logs the error and serves clients without it (AdminAddr returns nil).
func (s *Server) startOperations() error {
	if err := s.registerMetrics(); err != nil {
		return err
	}
	if s.cfg.MetricsProviderClassName == PrometheusMetricsProvider {
		if err := s.startMetricsEndpoint(); err != nil {
			return err
		}
	}
	if s.cfg.AdminEnableServer {
		if err := s.startAdminServer(); err != nil {
			s.log.Error("AdminServer not started; serving clients without it", "err", err)
		}
	}
	return nil
}

// stopOperations closes the listeners and unregisters the collectors. It
// may be called more than once, and before startOperations.
func (s *Server) stopOperations() {
	o := s.ops
	if o == nil {
		return
	}
	o.mu.Lock()
	eps := []*httpEndpoint{o.metricsEP, o.adminEP}
	o.metricsEP, o.adminEP = nil, nil
	registered := o.registered
	o.registered = nil
	o.mu.Unlock()
	for _, ep := range eps {
		ep.close()
	}
	for _, c := range registered {
		o.registerer.Unregister(c)
	}
}

// registerMetrics registers the gauges, the summaries and, unless
// metricsProvider.exportJvmInfo is false, the Go runtime and process
// collectors. Runtime collectors a caller's registry already has are
// accepted as they are.
func (s *Server) registerMetrics() error {
	o := s.ops
	var own []prometheus.Collector
	for _, g := range s.gauges() {
		own = append(own, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, g.value))
	}
	own = append(own, o.metrics.readLatency, o.metrics.updateLatency, o.metrics.fsyncTime,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: connectionPanicsMetric,
			Help: "Panics while serving one client's requests; each closed that connection only (zkserverd's own)."},
			func() float64 { return float64(s.stats.connPanics.Load()) }))
	var runtime []prometheus.Collector
	if exportRuntimeMetrics(s.cfg.Extra) {
		runtime = append(runtime, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range own {
		if err := o.registerer.Register(c); err != nil {
			return fmt.Errorf("server: register metrics: %w", err)
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
			return fmt.Errorf("server: register runtime metrics: %w", err)
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
func (s *Server) startMetricsEndpoint() error {
	host := s.cfg.Extra[metricsHostKey]
	if host == "" {
		host = "0.0.0.0"
	}
	if s.ops.gatherer == nil {
		return ErrNoGatherer
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.ops.gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	addr := net.JoinHostPort(host, strconv.Itoa(s.cfg.MetricsHTTPPort))
	ep, err := serveHTTP(addr, mux, 0, s.log)
	if err != nil {
		return fmt.Errorf("server: metrics endpoint: %w", err)
	}
	s.ops.mu.Lock()
	s.ops.metricsEP = ep
	s.ops.mu.Unlock()
	s.log.Info("serving metrics", "addr", ep.ln.Addr().String(), "path", "/metrics")
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
