package testutil

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
)

// Member is one member of an Ensemble: a *server.Server, or a test's
// wrapper of one. It is created stopped; Start returns once it listens.
type Member interface {
	Server
	WaitServing(ctx context.Context) error
}

// PortPicker hands out loopback ports that are free now and were not
// handed out before (test/ports.Picker): an ensemble writes its ports into
// the configurations before anything binds them.
type PortPicker interface {
	Free(t testing.TB) int
}

// EnsembleSpec describes an ensemble of Size members on 127.0.0.1, with ids
// 1 to Size; a member's index is its id less one.
type EnsembleSpec[M Member] struct {
	// Size is the number of members.
	Size int
	// Observers are the ids of the members that are observers.
	Observers []int64
	// Joining are the ids of the members that join later: the others'
	// configurations leave them out, and they start with join=true and all
	// the members' lines (a reconfig adds them). Launch does not wait for
	// them to serve.
	Joining []int64
	// Ports picks every member's quorum, election and client port.
	Ports PortPicker
	// Base returns the configuration of member i before the ensemble's
	// lines and its client port are set, once per member (nil: Config in a
	// fresh directory). Its data directory must be the member's own.
	Base func(i int) conf.Config
	// Link, when set, returns the line member from writes for member to,
	// given to's own line: a test routes a link through a proxy by
	// rewriting its ports.
	Link func(from, to int, line conf.Server) conf.Server
	// New builds member i on cfg without starting it.
	New func(i int, cfg conf.Config) (M, error)
}

// Ensemble is a cluster of members built from one EnsembleSpec, in the
// test's process. Every running member is closed when the test ends
// (before the cleanups registered while it started, such as its logger's).
// It is driven by the test's goroutine only.
type Ensemble[M Member] struct {
	t       testing.TB
	spec    EnsembleSpec[M]
	lines   []conf.Server
	cfgs    []conf.Config
	members []M
	running []bool
}

// memberTimeout bounds a member's start and the wait until it serves.
const memberTimeout = 30 * time.Second

// NewEnsemble picks the ports and writes every member's configuration;
// it starts nothing (Launch, Start).
func NewEnsemble[M Member](t testing.TB, spec EnsembleSpec[M]) *Ensemble[M] {
	t.Helper()
	e := &Ensemble[M]{t: t, spec: spec, members: make([]M, spec.Size), running: make([]bool, spec.Size)}
	for i := range spec.Size {
		id := int64(i + 1)
		e.lines = append(e.lines, conf.Server{ID: id, Host: "127.0.0.1",
			PeerPort: spec.Ports.Free(t), ElectionPort: spec.Ports.Free(t),
			ClientAddress: "127.0.0.1", ClientPort: spec.Ports.Free(t),
			Observer: slices.Contains(spec.Observers, id)})
	}
	for i := range spec.Size {
		e.cfgs = append(e.cfgs, e.config(i))
	}
	return e
}

// StartEnsemble builds the ensemble spec describes and launches it.
func StartEnsemble[M Member](t testing.TB, spec EnsembleSpec[M]) *Ensemble[M] {
	t.Helper()
	e := NewEnsemble(t, spec)
	e.Launch()
	return e
}

// config is member i's configuration: its base, the lines it knows
// (through the spec's Link), its id and its client port.
func (e *Ensemble[M]) config(i int) conf.Config {
	var cfg conf.Config
	if e.spec.Base != nil {
		cfg = e.spec.Base(i)
	} else {
		cfg = Config(e.t.TempDir())
	}
	joining := e.joining(i)
	cfg.Servers = nil
	for j, line := range e.lines {
		if e.joining(j) && !joining {
			continue
		}
		if j != i && e.spec.Link != nil {
			line = e.spec.Link(i, j, line)
		}
		cfg.Servers = append(cfg.Servers, line)
	}
	cfg.MyID, cfg.Join = int64(i+1), joining
	cfg.ClientPortAddress, cfg.ClientPort = e.lines[i].ClientAddress, e.lines[i].ClientPort
	return cfg
}

func (e *Ensemble[M]) joining(i int) bool { return slices.Contains(e.spec.Joining, int64(i+1)) }

// Launch starts every member and waits until each one that is not
// joining serves.
func (e *Ensemble[M]) Launch() {
	e.t.Helper()
	for i := range e.spec.Size {
		e.Start(i)
	}
	for i := range e.spec.Size {
		if !e.joining(i) {
			e.WaitServing(i)
		}
	}
}

// Size is the number of members, running or not.
func (e *Ensemble[M]) Size() int { return e.spec.Size }

// Config is member i's configuration.
func (e *Ensemble[M]) Config(i int) conf.Config { return e.cfgs[i] }

// Line is member i's own server line, as members without a Link write it.
func (e *Ensemble[M]) Line(i int) conf.Server { return e.lines[i] }

// Addr is member i's client address, whether it runs or not.
func (e *Ensemble[M]) Addr(i int) string {
	return net.JoinHostPort(e.cfgs[i].ClientPortAddress, strconv.Itoa(e.cfgs[i].ClientPort))
}

// Addrs are every member's client addresses, a client's connect string.
func (e *Ensemble[M]) Addrs() []string {
	var out []string
	for i := range e.spec.Size {
		out = append(out, e.Addr(i))
	}
	return out
}

// Edit changes member i's configuration from its next start on.
func (e *Ensemble[M]) Edit(i int, edit func(*conf.Config)) { edit(&e.cfgs[i]) }

// Running reports whether member i was started and not stopped since.
func (e *Ensemble[M]) Running(i int) bool { return e.running[i] }

// Member is member i as last started (the zero M before its first start).
func (e *Ensemble[M]) Member(i int) M { return e.members[i] }

// Start starts member i (again, on its data directory, after Stop), and
// fails the test if it does not start; the test's end stops it.
func (e *Ensemble[M]) Start(i int) {
	e.t.Helper()
	if e.running[i] {
		e.t.Fatalf("member %d is already running", i+1)
	}
	m, err := e.spec.New(i, e.cfgs[i])
	if err != nil {
		e.t.Fatalf("member %d: %v", i+1, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), memberTimeout)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		m.Close()
		e.t.Fatalf("member %d start: %v", i+1, err)
	}
	e.members[i], e.running[i] = m, true
	e.t.Cleanup(func() { e.Stop(i) })
}

// Stop closes member i. An in-process member cannot die harder: Stop also
// stands for a killed member, whose data directory stays as it was.
func (e *Ensemble[M]) Stop(i int) {
	if e.running[i] {
		e.members[i].Close()
		e.running[i] = false
	}
}

// Restart stops member i, starts it again on its data directory and waits
// until it serves.
func (e *Ensemble[M]) Restart(i int) {
	e.t.Helper()
	e.Stop(i)
	e.Start(i)
	e.WaitServing(i)
}

// WaitServing waits up to 30 s until member i serves clients.
func (e *Ensemble[M]) WaitServing(i int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), memberTimeout)
	defer cancel()
	if err := e.members[i].WaitServing(ctx); err != nil {
		e.t.Fatalf("member %d not serving: %v", i+1, err)
	}
}

// Mode is the Mode line of member i's srvr reply ("leader", "follower",
// "observer", "read-only"), or "" when it does not answer one.
func (e *Ensemble[M]) Mode(i int) string { return FourLetterLine(e.Addr(i), "srvr", "Mode: ") }

// Leader waits up to 15 s for a running member that reports Mode: leader
// and returns its index.
func (e *Ensemble[M]) Leader() int {
	e.t.Helper()
	lead := -1
	Eventually(e.t, 15*time.Second, "a leader", func() bool {
		for i := range e.spec.Size {
			if e.running[i] && e.Mode(i) == "leader" {
				lead = i
				return true
			}
		}
		return false
	})
	return lead
}
