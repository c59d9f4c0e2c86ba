package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
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
	replica *mirror.Replica
	obs     *zab.Observer
	srv     *server.Server

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
	m := &mirrorServer{}
	srv, err := server.New(server.Options{Config: cfg, Logger: logger.With("component", "server"),
		Operator: ops.New(ops.Options{}), Replica: m.newReplica(logger)})
	if err != nil {
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

// mirrorServeConfig is the serving side's configuration: the client
// address of --client-addr, myid --myid, the ensemble's tickTime and
// session timeout bounds (so that sessions get the timeouts ZooKeeper's
// own members would give them), ZooKeeper's defaults otherwise. No data
// directory is used: the state lives in memory (dataDir is set only
// because the configuration requires one).
func mirrorServeConfig(f mirrorFlags) (conf.Config, error) {
	host, portText, err := net.SplitHostPort(f.clientAddr)
	if err != nil {
		return conf.Config{}, fmt.Errorf("mirror: --client-addr %q: %w", f.clientAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return conf.Config{}, fmt.Errorf("mirror: --client-addr %q: bad port", f.clientAddr)
	}
	cfg := conf.Default()
	cfg.MyID = f.myid
	cfg.ClientPort, cfg.ClientPortAddress = port, host
	cfg.AdminEnableServer = false
	cfg.DataDir = os.TempDir()
	cfg.FourLetterWordWhitelist = []string{"*"}
	text, err := os.ReadFile(f.ensemble)
	if err != nil {
		return conf.Config{}, fmt.Errorf("mirror: read the ensemble's configuration: %w", err)
	}
	for key, dst := range map[string]*int{"tickTime": &cfg.TickTime, "syncLimit": &cfg.SyncLimit,
		"minSessionTimeout": &cfg.MinSessionTimeout, "maxSessionTimeout": &cfg.MaxSessionTimeout} {
		if v := configValue(string(text), key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return conf.Config{}, fmt.Errorf("mirror: the ensemble's %s=%q: %w", key, v, err)
			}
			*dst = n
		}
	}
	return cfg, nil
}

// Freeze holds new client writes (they wait), lets those in flight
// finish, syncs with the ZooKeeper leader and returns the last zxid
// (mirror.Replica.Freeze). On failure the mirror is unfrozen again.
func (m *mirrorServer) Freeze(ctx context.Context) (int64, error) { return m.replica.Freeze(ctx) }

// Unfreeze sends the held writes and lets new ones go.
func (m *mirrorServer) Unfreeze() { m.replica.Unfreeze() }

// StopServing closes the client listener and every client connection
// and stops the replica (the sessions stay in the mirror's state, which
// the zab observer keeps following until Close). Later calls return the
// first one's result.
func (m *mirrorServer) StopServing() error {
	m.stopOnce.Do(func() { m.stopErr = m.srv.Close() })
	return m.stopErr
}

// Close stops serving and stops following the ensemble.
func (m *mirrorServer) Close() error {
	err := m.StopServing()
	m.obs.Close()
	return err
}
