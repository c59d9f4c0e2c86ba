// Package ops holds zkserverd's operator surfaces: the four-letter words'
// replies, the AdminServer's HTTP commands, the Prometheus /metrics
// endpoint and the audit log. It sits beside package server rather than in
// it because none of this is the client protocol: the server detects a
// four-letter word on its client port, and hands it, its request
// latencies and its writes to an Operator (server.Operator) that this
// package implements; everything shown here is read through State, the
// view of the server this package declares. The package is named for all
// four surfaces; "admin" alone would name only the AdminServer.
//
// Wiring: give the server a Surfaces as its Operator,
//
//	o := ops.New(ops.Options{})
//	srv, err := server.New(server.Options{Config: cfg, Operator: o})
//
// and the server starts the endpoints when its client port opens and stops
// them when it closes. Package server does not import this one.
package ops

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/watch"
)

// State is what the operator surfaces read from the server; *server.Server
// implements it.
type State interface {
	Config() conf.Config
	Logger() *slog.Logger
	Addr() net.Addr
	// SecureAddr is secureClientPort's listener address, nil without one.
	SecureAddr() net.Addr
	Started() time.Time
	Serving() bool
	ReadOnly() bool
	Mode() string
	Replica() server.Replica
	Watches() *watch.Registry
	DataDirs() (snap, txnLog string)
	SessionExpiry() map[time.Time][]int64
	LocalSessionCount() int
	Stats() server.Stats
	ResetStats()
	Connections() []server.ConnectionStats
	ResetConnectionStats()
}

var (
	_ State           = (*server.Server)(nil)
	_ server.Operator = (*Surfaces)(nil)
)

// Options configures the operator surfaces.
type Options struct {
	// Registerer receives the server's Prometheus metrics and Gatherer is
	// what /metrics serves (nil: a registry of the server's own; see
	// metrics.go).
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
}

// Surfaces are one server's operator surfaces. The metrics registry and the
// summaries exist from New; Start (called by the server) records the
// server, registers the collectors and opens the listeners, Stop removes
// both. st, cfg, log and audit are set by Start before any surface runs
// and not changed after; mu guards the fields below it.
type Surfaces struct {
	st    State
	cfg   conf.Config
	log   *slog.Logger
	audit *slog.Logger // audit.enable lines (audit.go)

	registerer prometheus.Registerer
	gatherer   prometheus.Gatherer
	metrics    *serverMetrics

	mu         sync.Mutex
	registered []prometheus.Collector
	metricsEP  *httpEndpoint
	adminEP    *httpEndpoint
}

// New prepares the operator surfaces. Without a Registerer the server gets
// a registry of its own (so several servers can share a process); without
// a Gatherer, /metrics serves the Registerer when it can be gathered too.
func New(opts Options) *Surfaces {
	reg, gatherer := opts.Registerer, opts.Gatherer
	if reg == nil {
		own := prometheus.NewRegistry()
		reg, gatherer = own, own
	}
	if gatherer == nil {
		gatherer, _ = reg.(prometheus.Gatherer)
	}
	return &Surfaces{registerer: reg, gatherer: gatherer, metrics: newServerMetrics()}
}

// Start attaches the surfaces to s, registers the metrics and opens
// /metrics and the AdminServer as configured (server.Operator).
func (o *Surfaces) Start(s *server.Server) error { return o.start(s) }

// start is Start for any State. It fails when the metrics cannot be
// registered or /metrics (which must be asked for) cannot listen; the
// server then does not start. ZooKeeper also exits when its AdminServer
// cannot start, but that one is on by default on port 8080, so zkserverd
// logs the error and serves clients without it (AdminAddr returns nil).
func (o *Surfaces) start(st State) error {
	o.st, o.cfg, o.log = st, st.Config(), st.Logger()
	o.audit = newAuditLogger(o.log)
	if err := o.registerMetrics(); err != nil {
		return err
	}
	if o.cfg.MetricsProviderClassName == PrometheusMetricsProvider {
		if err := o.startMetricsEndpoint(); err != nil {
			return err
		}
	}
	if o.cfg.AdminEnableServer {
		if err := o.startAdminServer(); err != nil {
			o.log.Error("AdminServer not started; serving clients without it", "err", err)
		}
	}
	return nil
}

// Stop closes the listeners and unregisters the collectors
// (server.Operator). It may be called more than once, and before Start.
func (o *Surfaces) Stop() {
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

// FourLetterWord writes a command's text reply (server.Operator): the
// whitelist's refusal, or the command's output.
func (o *Surfaces) FourLetterWord(cmd string, secure bool, in io.Reader, out io.Writer) {
	var b strings.Builder
	if !o.cfg.Allowed4LW(cmd) {
		fmt.Fprintf(&b, "%s is not executed because it is not in the whitelist.\n", cmd)
	} else {
		o.fourLetter(cmd, secure, &b, in)
	}
	io.WriteString(out, b.String())
}

// ObserveRequest records one answered request (server.Operator): writes
// (requests that become transactions) in updatelatency, everything else in
// readlatency, as ZooKeeper splits them.
func (o *Surfaces) ObserveRequest(op jute.OpCode, d time.Duration) {
	if op == jute.OpAuth || op == jute.OpSASL {
		return
	}
	if op.IsWrite() {
		o.metrics.updateLatency.Observe(d)
		return
	}
	o.metrics.readLatency.Observe(d)
}

// ObserveLogSync records one fsync of the log in fsynctime
// (server.Operator).
func (o *Surfaces) ObserveLogSync(d time.Duration) { o.metrics.fsyncTime.Observe(d) }

// Gatherer returns what /metrics serves: the server's own registry unless
// Options gave one (nil when Options.Registerer cannot be gathered and no
// Gatherer was given).
func (o *Surfaces) Gatherer() prometheus.Gatherer { return o.gatherer }

// MetricsAddr returns the address of the /metrics endpoint, or nil when it
// is not served (see PrometheusMetricsProvider).
func (o *Surfaces) MetricsAddr() net.Addr {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.metricsEP.addr()
}

// AdminAddr returns the AdminServer's address, or nil when it is disabled
// (admin.enableServer=false) or could not listen.
func (o *Surfaces) AdminAddr() net.Addr {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.adminEP.addr()
}
