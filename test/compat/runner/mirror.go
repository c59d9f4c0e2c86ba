package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/internal/fourletter"
	"github.com/zkserverd/zkserverd/internal/procgroup"
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

// Sids of the mirror-mode ensembles: the same in both, so that
// /zookeeper/config and the conf four-letter word differ only in ports
// (which the normalizer maps), with the observer (ZooKeeper's or the
// mirror) as server.4 in each.
var (
	mirrorVoters     = []int64{1, 2, 3}
	mirrorObserverID = int64(4)
	mirrorID         = mirrorObserverID
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
	zk, _, err := r.launchForMirrorMode(ctx, filepath.Join(r.work, "mirror-mode", "observer"), []int64{mirrorObserverID}, nil)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(r.work, "mirror-mode", "mirror")
	e, jaasProp, err := r.launchForMirrorMode(ctx, home, nil, []int64{mirrorID})
	if err != nil {
		zk.Close()
		return nil, err
	}
	m, err := r.startMirror(ctx, home, e, jaasProp)
	if err != nil {
		zk.Close()
		e.Close()
		return nil, err
	}
	obs := zk.Member(mirrorObserverID).ClientAddr()
	started[serverKey(kindObserver, plainServer)] = &server{kind: kindObserver, addr: obs}
	started[serverKey(kindMirror, plainServer)] = m
	r.logf("ZooKeeper observer serving on %s, zkserverd mirror on %s", obs, m.addr)
	return func() { m.proc.Stop(stopGrace); e.Close(); zk.Close() }, nil
}

// launchForMirrorMode launches three ZooKeeper voters configured as the
// standalone servers are (tickTime 2000, TTL nodes, the sasl ACL scheme
// with the JAAS users, the fast container reaper), with observers and
// outside members (whose server.N lines name a client port, as an
// observer's do: the mirror serves there). It returns the ensemble and the
// -D property naming the JAAS file the members got.
func (r *runner) launchForMirrorMode(ctx context.Context, home string, observers, outside []int64) (*zkproc.Ensemble, string, error) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, "", err
	}
	_, jaasProp, err := writeJAAS(home)
	if err != nil {
		return nil, "", err
	}
	e, err := zkproc.Launch(ctx, zkproc.Spec{
		Dir: home, Voters: mirrorVoters, Observers: observers, Outside: outside, OutsideClientPorts: true,
		Ports: r.ports, TickTime: 2000,
		ExtraConfig: []string{"extendedTypesEnabled=true",
			"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
		JVMProps: mirrorModeJVMProps(jaasProp),
	})
	if err != nil {
		return nil, "", fmt.Errorf("mirror mode: launch ZooKeeper in %s: %w", home, err)
	}
	return e, jaasProp, nil
}

// mirrorModeJVMProps are the -D properties of the ZooKeeper members and,
// through SERVER_JVMFLAGS, of the mirror: the container reaper's interval
// and the JAAS file (its Server section is the client port's SASL login).
func mirrorModeJVMProps(jaasProp string) []string {
	return []string{fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", containerCheckMs), jaasProp}
}

// startMirror runs `zkserverd mirror --client-addr` as sid mirrorID of e,
// as an operator would start it in place of a ZooKeeper observer: with a
// voter's zoo.cfg as --ensemble, the members' -D properties in
// SERVER_JVMFLAGS and the client address of its own server.N line. It
// waits until the mirror serves.
func (r *runner) startMirror(ctx context.Context, home string, e *zkproc.Ensemble, jaasProp string) (*server, error) {
	cfg := filepath.Join(e.Member(mirrorVoters[0]).Dir, "zoo.cfg")
	s := &server{kind: kindMirror, addr: e.Member(mirrorID).ClientAddr()}
	argv := []string{r.zkserverd, "mirror", "--ensemble", cfg, "--myid", fmt.Sprint(mirrorID),
		"--status-addr", "", "--client-addr", s.addr}
	env := []string{"SERVER_JVMFLAGS=" + strings.Join(mirrorModeJVMProps(jaasProp), " ")}
	var err error
	if s.proc, err = procgroup.Start(argv, procgroup.Options{Dir: home, Env: env, Log: filepath.Join(home, "mirror.log")}); err != nil {
		return nil, fmt.Errorf("start the mirror: %w", err)
	}
	if err := waitFor(ctx, s.proc, 60*time.Second, "serve clients", func() bool {
		out, err := fourletter.Ask(s.addr, "srvr")
		return err == nil && strings.Contains(out, "Mode: observer")
	}); err != nil {
		s.proc.Stop(stopGrace)
		return nil, fmt.Errorf("start the mirror: %w (log: %s)", err, s.proc.Log())
	}
	return s, nil
}
