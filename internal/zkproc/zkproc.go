// Package zkproc launches real Apache ZooKeeper ensembles (Debian's
// package: QuorumPeerMain from /usr/share/java) on loopback ports for
// tests: one directory, myid and zoo.cfg per member, server.N lines for
// the voters, for ZooKeeper observers, and for outside members that the
// test runs itself (such as a zab observer: their lines carry the
// observer role but nothing is started for them). A member can be
// stopped, killed and started again; Close stops them all.
//
// It is for tests only: it kills only the processes it started (each in
// a process group of its own), and every wait is bounded. Require gates a
// test on ZooKeeper being installed: it skips without it, or fails when
// ZKSERVERD_REQUIRE_ZOOKEEPER=1.
package zkproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/internal/procgroup"
	"github.com/zkserverd/zkserverd/internal/testutil"
)

// Debian's jars: zookeeper.jar's manifest names most of its dependencies;
// the two Netty jars and a logger are added.
const (
	ZooKeeperJar = "/usr/share/java/zookeeper.jar"
	classPath    = ZooKeeperJar + ":/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar:/usr/share/java/slf4j-simple.jar"
	mainClass    = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// Available reports why ZooKeeper cannot be launched here, or nil.
func Available() error {
	if _, err := os.Stat(ZooKeeperJar); err != nil {
		return fmt.Errorf("zkproc: Apache ZooKeeper's jar is missing (%s; apt-get install zookeeper): %w", ZooKeeperJar, err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("zkproc: no java on PATH: %w", err)
	}
	return nil
}

// PortPicker hands out loopback ports that are free and not handed out
// before (test/ports.Picker).
type PortPicker interface {
	Pick() (int, error)
}

// Spec describes an ensemble.
type Spec struct {
	// Dir holds every member's directory (a test's TempDir).
	Dir string
	// Voters are the participants' sids (at least one).
	Voters []int64
	// Observers are ZooKeeper observers to launch.
	Observers []int64
	// Outside are observers that are not launched: their server.N lines
	// (role observer) are written, their ports picked.
	Outside []int64
	// OutsideClientPorts picks a client port for each outside member too
	// and writes it in its line (host:quorum:election:observer;host:client),
	// as for a zkserverd mirror that serves clients there: clients that
	// follow /zookeeper/config (Curator's ensemble tracker) then keep it.
	OutsideClientPorts bool
	// Joining are observers that are not launched and not in the
	// configuration either: their ports are picked and Line gives what a
	// reconfig -add names (server.N=Line()); needs ReconfigEnabled.
	Joining []int64
	// Ports picks every port.
	Ports PortPicker
	// TickTime in ms (default 500: quick timeouts for tests).
	TickTime int
	// InitLimit and SyncLimit in ticks (defaults 20 and 10).
	InitLimit, SyncLimit int
	// ReconfigEnabled writes reconfigEnabled=true (reconfig -add works;
	// pair it with JVMProps -Dzookeeper.skipACL=yes or a superuser).
	ReconfigEnabled bool
	// ExtraConfig lines are appended to every zoo.cfg.
	ExtraConfig []string
	// MemberConfig, when set, gives lines appended to member id's zoo.cfg
	// after ExtraConfig (its own keystore, for instance).
	MemberConfig func(id int64) []string
	// JVMProps are -D options for every member.
	JVMProps []string
	// HeapMB is each JVM's -Xmx (default 256).
	HeapMB int
}

// Member is one server.N line of the ensemble.
type Member struct {
	ID           int64
	Observer     bool
	Outside      bool // not launched (Spec.Outside and Spec.Joining)
	Joining      bool // not in the configuration written (Spec.Joining)
	QuorumPort   int
	ElectionPort int
	ClientPort   int // 0 for an outside member (but a joining one, or with Spec.OutsideClientPorts)
	Dir          string

	proc *procgroup.Process // its JVM, in a process group of its own
}

// Line is the member's server.N value: host:quorum:election:role, and
// ;host:client when it has a client port.
func (m *Member) Line() string {
	role := "participant"
	if m.Observer {
		role = "observer"
	}
	s := fmt.Sprintf("127.0.0.1:%d:%d:%s", m.QuorumPort, m.ElectionPort, role)
	if m.ClientPort != 0 {
		s += fmt.Sprintf(";127.0.0.1:%d", m.ClientPort)
	}
	return s
}

// ClientAddr is the member's client address.
func (m *Member) ClientAddr() string { return "127.0.0.1:" + strconv.Itoa(m.ClientPort) }

// QuorumAddr and ElectionAddr are its peer addresses.
func (m *Member) QuorumAddr() string   { return "127.0.0.1:" + strconv.Itoa(m.QuorumPort) }
func (m *Member) ElectionAddr() string { return "127.0.0.1:" + strconv.Itoa(m.ElectionPort) }

// Log is the path of the member's output.
func (m *Member) Log() string { return filepath.Join(m.Dir, "zookeeper.log") }

// Ensemble is a running set of ZooKeeper processes. Its methods are safe
// for concurrent use; mu guards the members' processes.
type Ensemble struct {
	spec    Spec
	members []*Member // in sid order

	mu sync.Mutex
}

// Launch writes every member's configuration and starts the launched
// members; it returns once each of them serves, or stops them all and
// fails when ctx ends first.
func Launch(ctx context.Context, spec Spec) (*Ensemble, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if len(spec.Voters) == 0 || spec.Ports == nil || spec.Dir == "" {
		return nil, errors.New("zkproc: Spec needs Voters, Ports and Dir")
	}
	if spec.TickTime <= 0 {
		spec.TickTime = 500
	}
	if spec.InitLimit <= 0 {
		spec.InitLimit = 20
	}
	if spec.SyncLimit <= 0 {
		spec.SyncLimit = 10
	}
	if spec.HeapMB <= 0 {
		spec.HeapMB = 256
	}
	if len(spec.Joining) > 0 && !spec.ReconfigEnabled {
		return nil, errors.New("zkproc: Spec.Joining needs ReconfigEnabled")
	}
	members, err := planMembers(spec)
	if err != nil {
		return nil, err
	}
	e := &Ensemble{spec: spec, members: members}
	for _, m := range e.members {
		if m.Outside {
			continue
		}
		if err := e.writeConfig(m); err != nil {
			return nil, err
		}
	}
	for _, m := range e.members {
		if !m.Outside {
			if err := e.Start(m.ID); err != nil {
				e.Close()
				return nil, err
			}
		}
	}
	for _, m := range e.members {
		if !m.Outside {
			if err := e.WaitServing(ctx, m.ID); err != nil {
				e.Close()
				return nil, err
			}
		}
	}
	return e, nil
}

// planMembers picks every member's ports and directory, in sid order.
func planMembers(spec Spec) ([]*Member, error) {
	var members []*Member
	add := func(ids []int64, observer, outside, joining bool) error {
		for _, id := range ids {
			m := &Member{ID: id, Observer: observer, Outside: outside, Joining: joining, Dir: filepath.Join(spec.Dir, fmt.Sprintf("zk%d", id))}
			ports := []*int{&m.QuorumPort, &m.ElectionPort}
			if !outside || joining || spec.OutsideClientPorts {
				// a reconfig -add wants three ports, the client's too
				ports = append(ports, &m.ClientPort)
			}
			for _, p := range ports {
				n, err := spec.Ports.Pick()
				if err != nil {
					return fmt.Errorf("zkproc: pick a port: %w", err)
				}
				*p = n
			}
			members = append(members, m)
		}
		return nil
	}
	if err := errors.Join(add(spec.Voters, false, false, false), add(spec.Observers, true, false, false),
		add(spec.Outside, true, true, false), add(spec.Joining, true, true, true)); err != nil {
		return nil, err
	}
	slices.SortFunc(members, func(a, b *Member) int { return int(a.ID - b.ID) })
	return members, nil
}

func (e *Ensemble) writeConfig(m *Member) error {
	data := filepath.Join(m.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zkproc: member %d: %w", m.ID, err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.FormatInt(m.ID, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("zkproc: member %d myid: %w", m.ID, err)
	}
	lines := []string{
		"tickTime=" + strconv.Itoa(e.spec.TickTime),
		"initLimit=" + strconv.Itoa(e.spec.InitLimit),
		"syncLimit=" + strconv.Itoa(e.spec.SyncLimit),
		"dataDir=" + data,
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"standaloneEnabled=false",
		fmt.Sprintf("reconfigEnabled=%t", e.spec.ReconfigEnabled),
	}
	if m.Observer {
		lines = append(lines, "peerType=observer")
	}
	for _, o := range e.members {
		if !o.Joining {
			lines = append(lines, fmt.Sprintf("server.%d=%s", o.ID, o.Line()))
		}
	}
	lines = append(lines, e.spec.ExtraConfig...)
	if e.spec.MemberConfig != nil {
		lines = append(lines, e.spec.MemberConfig(m.ID)...)
	}
	if err := os.WriteFile(filepath.Join(m.Dir, "zoo.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("zkproc: member %d zoo.cfg: %w", m.ID, err)
	}
	return nil
}

// Members returns every member, outside ones included, in sid order.
func (e *Ensemble) Members() []*Member { return slices.Clone(e.members) }

// Member returns the member with sid id, or nil.
func (e *Ensemble) Member(id int64) *Member {
	for _, m := range e.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// ServerLines returns the server.N value of every member in the
// configuration written (not the joining ones) by sid.
func (e *Ensemble) ServerLines() map[int64]string {
	out := make(map[int64]string, len(e.members))
	for _, m := range e.members {
		if !m.Joining {
			out[m.ID] = m.Line()
		}
	}
	return out
}

// ClientAddrs returns the launched members' client addresses.
func (e *Ensemble) ClientAddrs() []string {
	var out []string
	for _, m := range e.members {
		if !m.Outside {
			out = append(out, m.ClientAddr())
		}
	}
	return out
}

func (e *Ensemble) launched(id int64) (*Member, error) {
	m := e.Member(id)
	if m == nil || m.Outside {
		return nil, fmt.Errorf("zkproc: no launched member %d", id)
	}
	return m, nil
}

// Start starts member id (again); it does not wait for it to serve.
func (e *Ensemble) Start(id int64) error {
	m, err := e.launched(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.proc != nil && !m.proc.Exited() {
		return fmt.Errorf("zkproc: member %d is running", id)
	}
	argv := []string{"java", fmt.Sprintf("-Xmx%dm", e.spec.HeapMB), "-XX:+UseSerialGC", "-Xshare:auto"}
	argv = append(argv, e.spec.JVMProps...)
	argv = append(argv, "-cp", classPath, mainClass, filepath.Join(m.Dir, "zoo.cfg"))
	p, err := procgroup.Start(argv, procgroup.Options{Dir: m.Dir, Log: m.Log()})
	if err != nil {
		return fmt.Errorf("zkproc: start member %d: %w", id, err)
	}
	m.proc = p
	return nil
}

// stopGrace is how long Stop waits after SIGTERM before it kills.
const stopGrace = 5 * time.Second

// Stop stops member id (SIGTERM, SIGKILL after five seconds).
func (e *Ensemble) Stop(id int64) error { return e.end(id, false) }

// Kill kills member id at once (SIGKILL).
func (e *Ensemble) Kill(id int64) error { return e.end(id, true) }

func (e *Ensemble) end(id int64, kill bool) error {
	m, err := e.launched(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	p := m.proc
	e.mu.Unlock()
	if p == nil {
		return nil
	}
	if kill {
		p.Kill()
	} else {
		p.Stop(stopGrace)
	}
	return nil
}

// Running reports whether member id's process is alive.
func (e *Ensemble) Running(id int64) bool {
	m := e.Member(id)
	if m == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return m.proc != nil && !m.proc.Exited()
}

// Close stops every launched member.
func (e *Ensemble) Close() {
	var wg sync.WaitGroup
	for _, m := range e.members {
		if !m.Outside {
			wg.Add(1)
			go func() { defer wg.Done(); e.Stop(m.ID) }()
		}
	}
	wg.Wait()
}

// Mode returns what srvr says member id is (leader, follower, observer),
// or an error when it does not serve.
func (e *Ensemble) Mode(id int64) (string, error) {
	m, err := e.launched(id)
	if err != nil {
		return "", err
	}
	out, err := testutil.FourLetter(m.ClientAddr(), "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("zkproc: member %d does not serve: %q", id, strings.TrimSpace(out))
}

// WaitServing waits until member id serves (srvr reports a mode), for at
// most 90 seconds or until ctx ends; it fails at once if the process has
// exited.
func (e *Ensemble) WaitServing(ctx context.Context, id int64) error {
	m, err := e.launched(id)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := e.Mode(id); err == nil {
			return nil
		}
		if !e.Running(id) {
			return fmt.Errorf("zkproc: member %d exited before serving (log %s)", id, m.Log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zkproc: member %d did not serve within 90s (log %s)", id, m.Log())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zkproc: waiting for member %d: %w", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Leader returns the sid of the member that says it leads, waiting (up to
// 60 seconds or ctx) until exactly one running voter does.
func (e *Ensemble) Leader(ctx context.Context) (int64, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var leaders []int64
		for _, m := range e.members {
			if m.Outside || m.Observer || !e.Running(m.ID) {
				continue
			}
			if mode, err := e.Mode(m.ID); err == nil && mode == "leader" {
				leaders = append(leaders, m.ID)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("zkproc: no single leader within 60s (leaders: %v)", leaders)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("zkproc: waiting for a leader: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
