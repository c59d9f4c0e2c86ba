package testutil

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/test/ports"
)

// fakeMember listens on its configuration's client port and answers srvr
// with "Mode: " and the mode of its id in modes; it serves unless it was
// started with join=true. closed counts its closes.
type fakeMember struct {
	cfg    conf.Config
	modes  map[int64]string
	ln     net.Listener
	closed *atomic.Int32
}

func (m *fakeMember) Start(context.Context) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(m.cfg.ClientPortAddress, strconv.Itoa(m.cfg.ClientPort)))
	if err != nil {
		return err
	}
	m.ln = ln
	go m.serve()
	return nil
}

func (m *fakeMember) serve() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			return
		}
		c.Read(make([]byte, 4))
		c.Write([]byte("Zookeeper version: fake\nMode: " + m.modes[m.cfg.MyID] + "\n"))
		c.Close()
	}
}

func (m *fakeMember) Close() error {
	m.closed.Add(1)
	return m.ln.Close()
}

func (m *fakeMember) WaitServing(context.Context) error {
	if m.cfg.Join {
		return errors.New("a joining member serves once it is added")
	}
	return nil
}

// fakeSpec describes an ensemble of fake members whose modes are modes'.
func fakeSpec(size int, modes map[int64]string, closed *atomic.Int32) EnsembleSpec[*fakeMember] {
	return EnsembleSpec[*fakeMember]{Size: size, Ports: ports.ForTestutil(),
		New: func(_ int, cfg conf.Config) (*fakeMember, error) {
			return &fakeMember{cfg: cfg, modes: modes, closed: closed}, nil
		}}
}

// TestEnsembleConfigurations: every member lists the lines its spec
// implies (observers marked, joining members only in their own, links
// rewritten for the others' lines only) with its own id and client port.
func TestEnsembleConfigurations(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		observers []int64
		joining   []int64
		link      bool
		wantLines []int // how many lines each member lists
	}{
		{name: "three", size: 3, wantLines: []int{3, 3, 3}},
		{name: "five with an observer", size: 5, observers: []int64{5}, wantLines: []int{5, 5, 5, 5, 5}},
		{name: "a joining fourth", size: 4, joining: []int64{4}, wantLines: []int{3, 3, 3, 4}},
		{name: "linked", size: 3, link: true, wantLines: []int{3, 3, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := fakeSpec(tc.size, nil, new(atomic.Int32))
			spec.Observers, spec.Joining = tc.observers, tc.joining
			if tc.link {
				spec.Link = func(from, to int, line conf.Server) conf.Server {
					line.PeerPort, line.ElectionPort = 100*(from+1)+to, 1000*(from+1)+to
					return line
				}
			}
			e := NewEnsemble(t, spec)
			checkConfigurations(t, e, tc.observers, tc.joining, tc.link, tc.wantLines)
		})
	}
}

func checkConfigurations(t *testing.T, e *Ensemble[*fakeMember], observers, joining []int64, link bool, wantLines []int) {
	t.Helper()
	seen := map[int]bool{}
	for i := range e.Size() {
		own := e.Line(i)
		for _, p := range []int{own.PeerPort, own.ElectionPort, own.ClientPort} {
			if seen[p] {
				t.Fatalf("port %d given twice", p)
			}
			seen[p] = true
		}
		if own.ID != int64(i+1) || own.Host != "127.0.0.1" || own.Observer != slices.Contains(observers, own.ID) {
			t.Errorf("member %d's line %+v", i+1, own)
		}
		cfg := e.Config(i)
		if cfg.MyID != own.ID || cfg.ClientPort != own.ClientPort || cfg.Join != slices.Contains(joining, own.ID) {
			t.Errorf("member %d: myid %d, client port %d, join %v", i+1, cfg.MyID, cfg.ClientPort, cfg.Join)
		}
		if len(cfg.Servers) != wantLines[i] {
			t.Fatalf("member %d lists %d lines, want %d", i+1, len(cfg.Servers), wantLines[i])
		}
		for j, line := range cfg.Servers {
			want := e.Line(j)
			if link && j != i {
				want.PeerPort, want.ElectionPort = 100*(i+1)+j, 1000*(i+1)+j
			}
			if line != want {
				t.Errorf("member %d's line for %d = %+v, want %+v", i+1, j+1, line, want)
			}
		}
	}
}

// TestEnsembleLifecycle: Launch starts every member and waits for those
// not joining; Leader finds the running member that says so; Stop and
// Restart close and rebuild one member; the test's end closes the rest.
func TestEnsembleLifecycle(t *testing.T) {
	closed := new(atomic.Int32)
	t.Run("run", func(t *testing.T) {
		modes := map[int64]string{1: "follower", 2: "leader", 3: "follower", 4: "observer"}
		spec := fakeSpec(4, modes, closed)
		spec.Joining = []int64{4}
		e := StartEnsemble(t, spec)
		for i := range e.Size() {
			if !e.Running(i) || e.Member(i).cfg.MyID != int64(i+1) {
				t.Fatalf("member %d not running after Launch", i+1)
			}
		}
		if lead := e.Leader(); lead != 1 {
			t.Fatalf("Leader = %d, want 1", lead)
		}
		if m := e.Mode(3); m != "observer" {
			t.Fatalf("Mode(3) = %q", m)
		}
		first := e.Member(1)
		e.Restart(1)
		if e.Member(1) == first || !e.Running(1) || closed.Load() != 1 {
			t.Fatalf("Restart: same member %v, running %v, %d closed", e.Member(1) == first, e.Running(1), closed.Load())
		}
		e.Stop(2)
		e.Stop(2)
		if e.Running(2) || closed.Load() != 2 {
			t.Fatalf("Stop: running %v, %d closed, want 2", e.Running(2), closed.Load())
		}
		if got := e.Addrs(); len(got) != 4 || got[2] != e.Addr(2) {
			t.Fatalf("Addrs = %v", got)
		}
	})
	if got := closed.Load(); got != 5 {
		t.Fatalf("%d closes after the test, want 5 (two before it, the three still running at its end)", got)
	}
}
