package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/mirror"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
	"github.com/zkserverd/zkserverd/zab"
)

// The pieces of a mirror that serves clients fit each other.
var (
	_ server.Replica  = (*mirror.Replica)(nil)
	_ zab.Handler     = (*mirror.Replica)(nil)
	_ mirror.Upstream = (*zab.Observer)(nil)
)

// mirrorServer is a mirror that serves ZooKeeper clients on
// --client-addr as a ZooKeeper observer does (mirror.Replica): the zab
// observer that follows the ensemble, the replica over its state, and the
// server in front of them.
type mirrorServer struct {
	replica  *mirror.Replica
	obs      *zab.Observer
	srv      *server.Server
	clientLn *handoffListener // the client port, lent to srv (handoff.go)

	stopOnce sync.Once
	stopErr  error
}

// startMirrorServer follows the ensemble view and serves clients on
// f.clientAddr; the server refuses clients until the mirror is synced.
func startMirrorServer(ctx context.Context, f mirrorFlags, view zab.View, logger *slog.Logger) (*mirrorServer, error) {
	cfg, err := mirrorServeConfig(f)
	if err != nil {
		return nil, err
	}
	sec, err := readMirrorSecurity(f.ensemble, logger) // quorum TLS and SASL (mirror_security.go)
	if err != nil {
		return nil, err
	}
	ln, err := server.ClientListenConfig(cfg).Listen(ctx, "tcp", cfg.ClientAddr())
	if err != nil {
		return nil, fmt.Errorf("mirror: --client-addr: %w", err)
	}
	m := &mirrorServer{clientLn: newHandoffListener(ln, logger.With("component", "server"))}
	srv, err := server.New(server.Options{Config: cfg, Logger: logger.With("component", "server"),
		Operator: ops.New(ops.Options{}), Replica: m.newReplica(logger), ClientListener: m.clientLn.lend()})
	if err != nil {
		m.clientLn.Close()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	m.srv = srv
	// The observer starts once the server is built: the replica calls the
	// server's apply hook from the observer's goroutine.
	zcfg := zab.Config{MyID: f.myid, Servers: view.Servers, Handler: m.replica, Logger: logger.With("component", "zab")}
	sec.apply(&zcfg)
	obs, err := zab.Start(zcfg)
	if err != nil {
		srv.Close()
		m.clientLn.Close()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	m.obs = obs
	m.replica.Follow(obs)
	if err := srv.Start(ctx); err != nil {
		m.Close()
		return nil, fmt.Errorf("mirror: serve clients: %w", err)
	}
	return m, nil
}

// newReplica returns the server's replica factory: a mirror.Replica over
// the server's tree configuration, kept in m.replica.
func (m *mirrorServer) newReplica(logger *slog.Logger) func(server.ReplicaSetup) (server.Replica, error) {
	return func(setup server.ReplicaSetup) (server.Replica, error) {
		m.replica = mirror.NewReplica(mirror.ReplicaOptions{ServerID: setup.ServerID, Observer: setup.Observer,
			Tree: setup.Tree, Logger: logger.With("component", "mirror")})
		return m.replica, nil
	}
}

// mirrorServeConfig is the serving side's configuration: the ensemble's
// zoo.cfg read as its own members read it, with the -D properties of
// SERVER_JVMFLAGS and JVMFLAGS under it (conf.SystemProperties; the file
// wins), so that the mirror's client port is configured as a ZooKeeper
// observer's given the same file and JVM flags would be: tickTime, session
// timeout bounds, TTL nodes, the authentication providers and the client
// SASL login (the Server section of java.security.auth.login.config,
// sasl.serverconfig, superUser, enforced authentication), the server.N
// lines and limits that `conf` shows. On top: myid --myid, the client
// address of --client-addr and nothing else (no secureClientPort, no
// AdminServer), every four-letter word, no read-only mode (readonlymode.enabled
// is ignored), and no data directory in use (the
// state lives in memory; dataDir is set only because the configuration
// requires one).
func mirrorServeConfig(f mirrorFlags) (conf.Config, error) {
	host, portText, err := net.SplitHostPort(f.clientAddr)
	if err != nil {
		return conf.Config{}, fmt.Errorf("mirror: --client-addr %q: %w", f.clientAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return conf.Config{}, fmt.Errorf("mirror: --client-addr %q: bad port", f.clientAddr)
	}
	text, err := os.ReadFile(f.ensemble)
	if err != nil {
		return conf.Config{}, fmt.Errorf("mirror: read the ensemble's configuration: %w", err)
	}
	sys, _ := conf.SystemProperties(os.Environ())
	cfg, _, err := conf.Parse(bytes.NewReader(text), sys...)
	if err != nil {
		return conf.Config{}, fmt.Errorf("mirror: %s: %w", f.ensemble, err)
	}
	cfg.MyID = f.myid
	cfg.ClientPort, cfg.ClientPortAddress, cfg.NoClientPort = port, host, false
	cfg.SecureClientPort, cfg.SecureClientPortAddress = 0, ""
	cfg.AdminEnableServer = false
	cfg.DataDir, cfg.DataLogDir = os.TempDir(), ""
	cfg.FourLetterWordWhitelist = []string{"*"}
	cfg.ReadOnlyModeEnabled = false // without a leader the mirror serves nobody
	cfg.Servers = servedMembership(cfg.Servers, f.myid, host, port)
	return cfg, nil
}

// servedMembership returns the server.N lines the mirror shows (conf):
// those of the ensemble with its own line's client address set to the one
// it serves on (a server.N line's client address is where a member
// listens), or none when the lines do not list the mirror (they live in a
// dynamic file; conf then shows no membership).
func servedMembership(servers []conf.Server, myid int64, host string, port int) []conf.Server {
	out := slices.Clone(servers)
	for i := range out {
		if out[i].ID == myid {
			out[i].ClientAddress, out[i].ClientPort = host, port
			return out
		}
	}
	return nil
}

// Freeze holds new client writes (they wait), lets those in flight
// finish, syncs with the ZooKeeper leader and returns the last zxid
// (mirror.Replica.Freeze). New clients wait too, accepted by the client
// port but not yet served: a frozen mirror would only fail their
// sessions when the voters stop, and the member it becomes at the switch
// takes them. On failure the mirror is unfrozen again.
func (m *mirrorServer) Freeze(ctx context.Context) (int64, error) {
	m.clientLn.hold(true)
	zxid, err := m.replica.Freeze(ctx)
	if err != nil {
		m.clientLn.hold(false)
	}
	return zxid, err
}

// Unfreeze sends the held writes and lets new ones go, and new clients
// in (after the switch, when the mirror serves no more, they wait for
// the member).
func (m *mirrorServer) Unfreeze() {
	m.replica.Unfreeze()
	m.clientLn.hold(false)
}

// StopServing closes every client connection and stops the replica (the
// sessions stay in the mirror's state, which the zab observer keeps
// following until Close); the client port (clientLn) stays open for
// the member the mirror becomes at a takeover. Later calls return the first one's result.
func (m *mirrorServer) StopServing() error {
	m.stopOnce.Do(func() { m.stopErr = m.srv.Close() })
	return m.stopErr
}

// Close stops serving, closes the client port and stops following the
// ensemble.
func (m *mirrorServer) Close() error {
	err := m.StopServing()
	m.clientLn.Close()
	m.obs.Close()
	return err
}
