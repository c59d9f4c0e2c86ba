package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/tlsconf"
	"github.com/zkserverd/zkserverd/txnlog"
	"github.com/zkserverd/zkserverd/watch"
)

// Version is reported by srvr, envi and mntr. ZooKeeper clients and tools
// parse the leading "3.8.0" as the protocol level served.
var Version = "3.8.0-zkserverd-dev"

// BuildDate is set at link time; it follows ZooKeeper's version line.
var BuildDate = "unknown"

// Options configures a Server: what an operator (zoo.cfg) or a program
// embedding a server sets. A test replaces parts of a server with Option
// values instead, given to New.
type Options struct {
	Config conf.Config
	// Logger receives structured logs (nil: discarded).
	Logger *slog.Logger
	// Operator provides the four-letter words' replies, the AdminServer,
	// /metrics and the audit log (package server/ops; nil: none, see
	// operator.go).
	Operator Operator
	// Replica, if set, supplies the replicated state instead of a
	// replication.Node in the data directory: the server then creates no
	// data directory and opens no replication of its own (a mirror of a
	// ZooKeeper ensemble serves this way; see ReplicaSetup).
	Replica func(ReplicaSetup) (Replica, error)
	// ClientListener, if set, is the client port's plaintext listener,
	// already open: the server accepts from it instead of listening on
	// clientPort itself, and closes it on Close (a mirror lends its
	// client port to the zkserverd member it becomes at a takeover, so
	// that clients who connect meanwhile wait instead of being refused).
	// Make it with ClientListenConfig. Ignored without a client port.
	ClientListener net.Listener
}

// ReplicaSetup is what the server hands a Replica it does not build
// itself (Options.Replica).
type ReplicaSetup struct {
	// ServerID is this server's id (zoo.cfg's myid, at least 1).
	ServerID int64
	// Observer is the server's apply hook; the Replica calls it as
	// replication.Node does (observer.go): Applying before a transaction
	// with no lock held, Applied with the tree's write lock held or none,
	// Restored after the state was replaced, never two at once.
	Observer replication.Observer
	// Tree is the tree configuration: ACL checks of the server's reads
	// go through its Authorizer.
	Tree datatree.Config
}

// Server is a standalone zkserverd member serving clients.
type Server struct {
	cfg     conf.Config
	log     *slog.Logger
	node    Replica // the replicated state (replica.go)
	tracker *session.Tracker
	idGen   *session.IDGenerator
	auth    *acl.Registry
	sasl    saslSetup // SASL login and enforced authentication (sasl.go)
	watches *watch.Registry
	stats   *serverStats
	// applying is owned by the FSM goroutine (observer.go).
	applying applyingTxn
	// admission throttles readers (globalOutstandingLimit,
	// largeRequestMaxBytes; admission.go).
	admission *admission
	touches   toucher
	serving   atomic.Bool
	// servedOnce is set when the server first serves (conn_handshake.go
	// awaitFirstServing).
	servedOnce atomic.Bool
	ro         readOnlyMode // readonlymode.enabled without a quorum (readonly.go)
	started    time.Time
	// memory refuses growing writes near the memory limit (memlimit.go).
	memory *memoryGuard
	// readBuffers holds the read buffers of ended connections (conn_pool.go).
	readBuffers sync.Pool
	// pipelines holds the empty pipeline queues of ended connections (conn_pool.go).
	pipelines sync.Pool
	// notifications shares encoded notification frames (watches.go).
	notifications notificationFrames
	// workers runs connections' goroutines (workers.go).
	workers  *workers
	dataDir  string
	logDir   string
	serverID int64
	operator Operator // operator surfaces (operator.go)

	reaperClock session.Clock // the container/TTL reaper's (reaper.go, WithReaperClock)

	// clientTLS and secureLn are the client port's TLS (tls.go); nil
	// without TLS.
	clientTLS *tlsconf.Reloader
	secureLn  net.Listener

	lentLn net.Listener // Options.ClientListener
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards the connection indexes below.
	mu        sync.Mutex
	conns     map[*conn]struct{}
	bySession map[int64]*conn
	perIP     map[string]int
	closed    bool
}

// Option replaces a part of a Server for a test of another package (a
// seam); New applies them after Options.
type Option func(*Server)

// WithReaperClock drives the container/TTL reaper (reaper.go) by clock
// instead of the real clock: a test sends its ticks by hand.
func WithReaperClock(clock session.Clock) Option {
	return func(s *Server) { s.reaperClock = clock }
}

// New opens the data directory and the replicated state. It does not listen
// yet: call Start.
func New(opts Options, seams ...Option) (*Server, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	authReg, err := newAuthRegistry(cfg, logger)
	if err != nil {
		return nil, err
	}
	saslSt, err := newSASLSetup(cfg, authReg, logger) // sasl.go
	if err != nil {
		return nil, err
	}
	clientTLS, err := newClientTLS(cfg, authReg, logger) // tls.go
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		log:       logger,
		auth:      authReg,
		sasl:      saslSt,
		clientTLS: clientTLS,
		watches:   watch.NewRegistry(),
		stats:     newServerStats(),
		operator:  opts.Operator,
		lentLn:    opts.ClientListener,
		serverID:  max(cfg.MyID, 1),
		conns:     make(map[*conn]struct{}),
		bySession: make(map[int64]*conn),
		perIP:     make(map[string]int),
	}
	if s.operator == nil {
		s.operator = noOperator{}
	}
	s.workers = newWorkers(s.taskPanicked)
	s.admission = newAdmission(cfg.GlobalOutstandingLimit, cfg.LargeRequestMaxBytes, cfg.LargeRequestThreshold, &s.stats.outstanding)
	s.reaperClock = session.RealClock{} // container/TTL reaper (reaper.go)
	s.memory = newMemoryGuard(cfg.MemoryLimitBytes, func() int64 { return s.node.LastZxid() }, logger)
	for _, o := range seams {
		o(s)
	}
	s.idGen = session.NewIDGenerator(s.serverID, time.Now().UnixMilli())
	s.tracker = session.NewTracker(session.RealClock{}, time.Duration(cfg.TickTime)*time.Millisecond, s.expireSessions)
	if opts.Replica != nil {
		node, err := opts.Replica(ReplicaSetup{ServerID: s.serverID, Observer: (*observer)(s), Tree: treeConfig(cfg, authReg)})
		if err != nil {
			return nil, fmt.Errorf("server: replica: %w", err)
		}
		s.node, s.dataDir, s.logDir = node, cfg.DataDir, cfg.EffectiveDataLogDir()
		return s, nil
	}
	if err := s.openReplication(cfg, authReg, logger); err != nil {
		return nil, err
	}
	return s, nil
}

// openReplication creates the data directories and opens the replicated
// state in them (a replication.Node).
func (s *Server) openReplication(cfg conf.Config, authReg *acl.Registry, logger *slog.Logger) error {
	s.dataDir, s.logDir = cfg.DataDir, cfg.DataLogDir
	if s.logDir == "" {
		s.logDir = s.dataDir
	}
	for _, d := range []string{s.dataDir, s.logDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("server: create data directory: %w", err)
		}
	}
	network, err := memberNetwork(cfg, logger) // ensemble.go
	if err != nil {
		return err
	}
	node, err := replication.Open(replication.Config{
		ServerID:              s.serverID,
		DataDir:               filepath.Join(s.dataDir, "version-2"),
		LogDir:                filepath.Join(s.logDir, "version-2"),
		ForceSync:             cfg.ForceSync,
		SnapshotThreshold:     uint64(cfg.SnapCount),
		Tree:                  treeConfig(cfg, authReg),
		Observer:              (*observer)(s),
		Logger:                logger,
		Peers:                 peersOf(cfg),
		Network:               network,
		ListenAll:             cfg.QuorumListenOnAllIPs,
		TickTime:              time.Duration(cfg.TickTime) * time.Millisecond,
		ForwardTimeout:        time.Duration(cfg.InitLimit*cfg.TickTime) * time.Millisecond,
		OnTouch:               s.onTouch,
		Join:                  cfg.Join,
		ForceNewEnsemble:      cfg.ForceNewEnsemble,
		DigestInterval:        millis(int64(cfg.DigestIntervalMs)),
		LogStore:              cfg.LogStore,
		WALSegmentSize:        cfg.WALSegmentSizeBytes,
		FsyncWarningThreshold: millis(cfg.FsyncWarningThresholdMs),
		OnLogSync:             s.observeLogSync,
	})
	if err != nil {
		return err
	}
	s.node = node
	return nil
}

// millis converts a configured number of milliseconds to a Duration,
// saturating instead of wrapping around for values beyond ~292 years.
func millis(ms int64) time.Duration {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// treeConfig maps the configuration to the tree's: zookeeper.skipACL turns
// permission checks off (ACL lists are still validated by the registry, so
// configured providers' schemes stay valid).
func treeConfig(cfg conf.Config, authReg *acl.Registry) datatree.Config {
	return datatree.Config{
		ExtendedTypesEnabled: cfg.ExtendedTypesEnabled,
		Authorizer:           authReg,
		SkipACL:              cfg.SkipACL,
		EnforceQuota:         enforceQuota(cfg), // zookeeper.enforceQuota (reaper.go)
	}
}

// Start opens the client port and serves. A standalone server first waits
// until its replicated state is current; an ensemble member returns at once
// and refuses clients until it has a quorum and has caught up (use
// WaitServing to wait for that). Either refuses clients while it is fenced
// (superviseServing).
func (s *Server) Start(ctx context.Context) error {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if !s.node.Clustered() {
		readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := s.node.WaitReady(readyCtx); err != nil {
			return err
		}
	}
	s.restartSessionClocks()
	ln, err := s.listenClients(ctx) // plaintext, unified and TLS ports (tls.go)
	if err != nil {
		return err
	}
	s.ln = ln
	s.started = time.Now()
	// Operator surfaces: metrics registry, /metrics, AdminServer (operator.go).
	if err := s.operator.Start(s); err != nil {
		return err
	}
	s.goAndTrack(func() { s.tracker.Run(s.ctx) })
	s.goAndTrack(func() { s.runReaper(s.ctx) }) // container/TTL reaper (reaper.go)
	s.memory.logStart()
	s.goAndTrack(func() { s.memory.run(s.ctx) }) // memlimit.go
	s.goAndTrack(s.acceptLoop)
	if s.node.Clustered() {
		s.goAndTrack(func() { s.reportTouches(s.ctx) })
		s.goAndTrack(func() { s.followLeadership(s.ctx) })
	} else if s.servingTrouble() == nil {
		s.markServing() // a fenced one waits in superviseServing
	}
	s.goAndTrack(func() { s.superviseServing(s.ctx) }) // ensemble.go
	s.log.Info("client port open", "addr", ln.Addr().String())
	return nil
}

// goAndTrack runs f in a goroutine that Close waits for.
func (s *Server) goAndTrack(f func()) {
	s.wg.Add(1)
	go func() { defer s.wg.Done(); f() }()
}

// WaitServing waits until the server accepts clients (quorum reached and
// caught up).
func (s *Server) WaitServing(ctx context.Context) error {
	for !s.serving.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// onTouch is the leader's receiver of liveness reports.
func (s *Server) onTouch(ids []int64) {
	for _, id := range ids {
		s.tracker.Touch(id)
	}
}

// Addr returns the client listener's address (after Start).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// ClientListenConfig is the client port's listener of a server with
// configuration cfg: no TCP keep-alive unless clientTcpKeepAlive=true, as
// in ZooKeeper, which then leaves the timings to the operating system (Go
// would set 15 s probes, four socket options on every accepted
// connection).
func ClientListenConfig(cfg conf.Config) *net.ListenConfig {
	if !cfg.ClientTCPKeepAlive {
		return &net.ListenConfig{KeepAlive: -1}
	}
	return &net.ListenConfig{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}}
}

// acceptLoop accepts connections until the listener closes.
func (s *Server) acceptLoop() {
	AcceptEach(s.ln, s.log, func(nc net.Conn) bool {
		if c, ok := s.admit(nc); ok {
			s.wg.Add(1)
			s.workers.run(func() { defer s.wg.Done(); c.serve() })
		}
		return true
	})
}

// AcceptEach hands each connection ln accepts to handle until ln closes
// or handle returns false, backing off on temporary errors as net/http
// does.
func AcceptEach(ln net.Listener, log *slog.Logger, handle func(net.Conn) bool) {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			log.Warn("accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if !handle(nc) {
			return
		}
	}
}

// admit registers a new connection, enforcing maxClientCnxns per address.
func (s *Server) admit(nc net.Conn) (*conn, bool) {
	ip := remoteIP(nc.RemoteAddr())
	s.mu.Lock()
	if s.closed || (s.cfg.MaxClientCnxns > 0 && s.perIP[ip] >= s.cfg.MaxClientCnxns) {
		s.mu.Unlock()
		s.log.Warn("too many connections from one address; closing", "remote", nc.RemoteAddr().String(), "limit", s.cfg.MaxClientCnxns)
		nc.Close()
		return nil, false
	}
	c := newConn(s, nc, ip)
	s.conns[c] = struct{}{}
	s.perIP[ip]++
	s.mu.Unlock()
	return c, true
}

// forget removes a finished connection from the indexes.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	if sid := c.sessionID.Load(); sid != 0 && s.bySession[sid] == c {
		delete(s.bySession, sid)
	}
}

// bind makes c the connection of session sid and returns the connection it
// replaces, if any.
func (s *Server) bind(sid int64, c *conn) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.bySession[sid]
	s.bySession[sid] = c
	return old
}

// sessionConn returns the connection currently bound to sid.
func (s *Server) sessionConn(sid int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bySession[sid]
}

// connections returns a snapshot of the live connections.
func (s *Server) connections() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// expireSessions is the tracker's callback: each expired session becomes a
// closeSession transaction; the apply hook closes its connection.
func (s *Server) expireSessions(ids []int64) {
	if s.node.Clustered() && !s.node.IsLeader() {
		return // only the leader expires sessions
	}
	for _, id := range ids {
		s.log.Info("session expired", "session", fmt.Sprintf("0x%x", id))
		s.node.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: id}})
	}
}

// Close stops accepting, closes every connection, stops the expiry clock and
// shuts the replicated state down. Sessions stay in the table and resume
// after a restart.
func (s *Server) Close() error {
	s.operator.Stop() // AdminServer and /metrics first (operator.go)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
	if s.lentLn != nil {
		s.lentLn.Close() // when Start did not get to it; closing twice is harmless
	}
	for _, c := range s.connections() {
		c.abort("server shutting down")
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.workers.stop()
	return s.node.Close()
}

// remoteIP returns the host part of a connection's remote address.
func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
