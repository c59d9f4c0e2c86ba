package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/internal/zkproc"
)

// Mirror mode: the standalone scenarios run against an Apache ZooKeeper
// observer (the reference) and against `zkserverd mirror --client-addr`,
// each an observer of a ZooKeeper 3.8 ensemble of three voters of its own
// (the scenarios expect a tree without the other's nodes), and their
// transcripts are compared as in diff mode, with its allowlist. The secured and ensemble
// scenarios do not run: the ensemble has no TLS client port, and the
// ensemble scenarios start ensembles of their own.
//
//	go run ./test/compat/runner -mode mirror
const (
	modeMirror   = "mirror"
	kindObserver = "zookeeper-observer"
	kindMirror   = "mirror"
)

// Sids of the mirror-mode ensemble.
var (
	mirrorVoters     = []int64{1, 2, 3}
	mirrorObserverID = int64(4)
	mirrorID         = int64(5)
)

// mirrorModeRuns reports whether sc runs in mirror mode: a plain
// standalone scenario.
func mirrorModeRuns(sc scenario) bool {
	return !sc.ensemble && !sc.secure && sc.flavour() == plainServer
}

// startMirrorPair launches two ensembles, one with a ZooKeeper observer
// and one with a zkserverd mirror serving clients, and records both
// servers in started. The returned function stops everything.
func (r *runner) startMirrorPair(ctx context.Context, started map[string]*server) (func(), error) {
	zk, err := r.launchForMirrorMode(ctx, filepath.Join(r.work, "mirror-mode", "observer"), []int64{mirrorObserverID}, nil)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(r.work, "mirror-mode", "mirror")
	e, err := r.launchForMirrorMode(ctx, home, nil, []int64{mirrorID})
	if err != nil {
		zk.Close()
		return nil, err
	}
	m, err := r.startMirror(ctx, home, e)
	if err != nil {
		zk.Close()
		e.Close()
		return nil, err
	}
	obs := zk.Member(mirrorObserverID).ClientAddr()
	started[serverKey(kindObserver, plainServer)] = &server{kind: kindObserver, addr: obs}
	started[serverKey(kindMirror, plainServer)] = m
	r.logf("ZooKeeper observer serving on %s, zkserverd mirror on %s", obs, m.addr)
	return func() { m.proc.stop(); e.Close(); zk.Close() }, nil
}

// launchForMirrorMode launches three ZooKeeper voters configured as the
// standalone servers are (tickTime 2000, TTL nodes, the sasl ACL scheme
// with the JAAS users, the fast container reaper), with observers and
// outside members.
func (r *runner) launchForMirrorMode(ctx context.Context, home string, observers, outside []int64) (*zkproc.Ensemble, error) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	_, jaasProp, err := writeJAAS(home)
	if err != nil {
		return nil, err
	}
	e, err := zkproc.Launch(ctx, zkproc.Spec{
		Dir: home, Voters: mirrorVoters, Observers: observers, Outside: outside, Ports: r.ports, TickTime: 2000,
		ExtraConfig: []string{"extendedTypesEnabled=true",
			"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
		JVMProps: []string{fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", containerCheckMs), jaasProp},
	})
	if err != nil {
		return nil, fmt.Errorf("mirror mode: launch ZooKeeper in %s: %w", home, err)
	}
	return e, nil
}

// startMirror runs `zkserverd mirror --client-addr` as sid mirrorID of e
// and waits until it serves.
func (r *runner) startMirror(ctx context.Context, home string, e *zkproc.Ensemble) (*server, error) {
	lines := []string{"tickTime=2000", "syncLimit=10"}
	for id, line := range e.ServerLines() {
		lines = append(lines, fmt.Sprintf("server.%d=%s", id, line))
	}
	cfg := filepath.Join(home, "ensemble.cfg")
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	port, err := r.ports.Pick()
	if err != nil {
		return nil, err
	}
	s := &server{kind: kindMirror, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	argv := []string{r.zkserverd, "mirror", "--ensemble", cfg, "--myid", fmt.Sprint(mirrorID),
		"--status-addr", "", "--client-addr", s.addr}
	if s.proc, err = spawn(argv, nil, home, filepath.Join(home, "mirror.log")); err != nil {
		return nil, fmt.Errorf("start the mirror: %w", err)
	}
	if err := s.proc.waitFor(ctx, 60*time.Second, "serve clients", func() bool {
		out, err := fourLetter(s.addr, "srvr")
		return err == nil && strings.Contains(out, "Mode: observer")
	}); err != nil {
		s.proc.stop()
		return nil, fmt.Errorf("start the mirror: %w (log: %s)", err, s.proc.log)
	}
	return s, nil
}
