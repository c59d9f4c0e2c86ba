package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkserverd/zkserverd/internal/fourletter"
	"github.com/zkserverd/zkserverd/internal/procgroup"
	"github.com/zkserverd/zkserverd/test/ports"
)

// Ensemble scenarios get a fresh ensemble of this many members per run.
const ensembleSize = 3

// ensembleTickMs is the members' tickTime: sessions of 2 to 20 s, a member
// that hears nothing from its leader gives up after syncLimit ticks (5 s).
const ensembleTickMs = 1000

// ensembleStartLimit bounds the start of an ensemble and of a restarted
// member: three JVMs on a shared two-core machine take a while.
const ensembleStartLimit = 90 * time.Second

// member is one member of an ensemble. Its fields are used by one
// goroutine at a time: the scenario's output copier while the scenario
// runs (control commands), the runner before and after.
type member struct {
	id                                   int
	clientPort, quorumPort, electionPort int
	home                                 string
	argv                                 []string
	proc                                 *procgroup.Process
	stopped                              bool // sent SIGSTOP and not SIGCONT since
}

func (m *member) addr() string { return fmt.Sprintf("127.0.0.1:%d", m.clientPort) }

// ensemble is a running ensemble of one server kind on loopback ports.
type ensemble struct {
	kind    string
	members []*member
	quorum  keys // key material of quorum TLS, "" for plaintext between members
}

// ensembleCfg is member m's zoo.cfg: the standalone settings plus the
// server.N lines, initLimit/syncLimit and, for read-only scenarios, local
// sessions and, for zkserverd, read-only mode (ZooKeeper reads that only as
// a JVM property, see startEnsemble).
func ensembleCfg(kind string, m *member, all []*member, readOnly bool, quorum keys) string {
	lines := []string{
		fmt.Sprintf("tickTime=%d", ensembleTickMs),
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + filepath.Join(m.home, "data"),
		fmt.Sprintf("clientPort=%d", m.clientPort),
		"clientPortAddress=127.0.0.1",
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
	}
	for _, o := range all {
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", o.id, o.quorumPort, o.electionPort))
	}
	if readOnly {
		// ZooKeeper 3.8 creates a read-only server's sessions as local
		// sessions only when they are enabled; without them it closes
		// every new connection in read-only mode. Upgrading lets the
		// scenarios' read-write sessions own ephemerals.
		lines = append(lines, "localSessionsEnabled=true", "localSessionsUpgradingEnabled=true")
		if kind == kindZkserverd {
			lines = append(lines, "readonlymode.enabled=true")
		}
	}
	text := strings.Join(lines, "\n") + "\n"
	if quorum != "" {
		text += quorum.quorumCfg()
	}
	return text
}

// startEnsemble writes the members' configurations and myid files under
// dir, starts them and waits until they serve with one leader. With key
// material (quorum), members talk to each other over TLS only.
func startEnsemble(ctx context.Context, kind, dir, zkserverdBin string, readOnly bool, quorum keys, pick *ports.Picker) (*ensemble, error) {
	e := &ensemble{kind: kind, quorum: quorum}
	for i := 1; i <= ensembleSize; i++ {
		m := &member{id: i, home: filepath.Join(dir, fmt.Sprintf("member%d", i))}
		for _, p := range []*int{&m.clientPort, &m.quorumPort, &m.electionPort} {
			port, err := pick.Pick()
			if err != nil {
				return nil, fmt.Errorf("start %s ensemble: %w", kind, err)
			}
			*p = port
		}
		e.members = append(e.members, m)
	}
	var props []string
	if readOnly {
		props = append(props, "-Dreadonlymode.enabled=true")
	}
	for _, m := range e.members {
		if err := e.prepare(m, zkserverdBin, readOnly, props); err != nil {
			return nil, err
		}
	}
	for _, m := range e.members {
		var err error
		if m.proc, err = procgroup.Start(m.argv, procgroup.Options{Dir: m.home, Log: filepath.Join(m.home, "server.log")}); err != nil {
			e.stop()
			return nil, fmt.Errorf("start %s member %d: %w", kind, m.id, err)
		}
	}
	if err := e.waitServing(ctx, ensembleStartLimit); err != nil {
		e.stop()
		return nil, fmt.Errorf("start %s ensemble: %w (logs under %s)", kind, err, dir)
	}
	return e, nil
}

// prepare writes m's data directory, myid and zoo.cfg and sets its argv.
func (e *ensemble) prepare(m *member, zkserverdBin string, readOnly bool, props []string) error {
	data := filepath.Join(m.home, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("member %d: %w", m.id, err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(m.id)+"\n"), 0o644); err != nil {
		return fmt.Errorf("member %d: %w", m.id, err)
	}
	cfg := filepath.Join(m.home, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(ensembleCfg(e.kind, m, e.members, readOnly, e.quorum)), 0o644); err != nil {
		return fmt.Errorf("member %d: %w", m.id, err)
	}
	var err error
	m.argv, err = serverArgv(e.kind, zkserverdBin, cfg, true, props...)
	return err
}

// connectString lists the members' client addresses in member order:
// member N is the N-th entry.
func (e *ensemble) connectString() string {
	addrs := make([]string, len(e.members))
	for i, m := range e.members {
		addrs[i] = m.addr()
	}
	return strings.Join(addrs, ",")
}

var modeLine = regexp.MustCompile(`(?m)^Mode: (\S+)`)

// mode returns the Mode line of m's srvr answer ("" when it has none,
// e.g. while it has no quorum).
func (m *member) mode() string {
	out, err := fourletter.Ask(m.addr(), "srvr")
	if err != nil {
		return ""
	}
	if g := modeLine.FindStringSubmatch(out); g != nil {
		return g[1]
	}
	return ""
}

// running reports whether m's process is alive and not stopped.
func (m *member) running() bool {
	return m.proc != nil && !m.proc.Exited() && !m.stopped
}

// leader returns the id of the member whose srvr says leader, or 0.
func (e *ensemble) leader() int {
	for _, m := range e.members {
		if m.running() && m.mode() == "leader" {
			return m.id
		}
	}
	return 0
}

// serving reports whether every running member is leader or follower and
// exactly one of them is the leader.
func (e *ensemble) serving() bool {
	leaders := 0
	for _, m := range e.members {
		if !m.running() {
			continue
		}
		switch m.mode() {
		case "leader":
			leaders++
		case "follower":
		default:
			return false
		}
	}
	return leaders == 1
}

// waitServing polls until the ensemble is serving.
func (e *ensemble) waitServing(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !e.serving() {
		for _, m := range e.members {
			if m.proc != nil && m.proc.Exited() && !m.stopped {
				return fmt.Errorf("member %d exited (log: %s)", m.id, m.proc.Log())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader with every running member following within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// stop ends every member, stopped ones included.
func (e *ensemble) stop() {
	for _, m := range e.members {
		if m.proc != nil && !m.proc.Exited() {
			m.proc.Stop(stopGrace)
		}
	}
}

// control carries out one control command of a scenario and returns the
// reply line: "@ok", "@ok VALUE" or "@error MESSAGE". Commands:
//
//	kill N      SIGKILL member N and wait until it is gone
//	stop N      SIGSTOP member N (its sockets stay open, it answers nothing)
//	cont N      SIGCONT member N
//	restart N   kill member N if it runs, start it again on its data and
//	            wait until the ensemble serves
//	wait        wait until every running member serves, with one leader
//	leader      wait as for wait, then reply "@ok N" with the leader's id
func (e *ensemble) control(ctx context.Context, command string) string {
	f := strings.Fields(command)
	var err error
	switch {
	case len(f) == 1 && f[0] == "leader":
		if err = e.waitServing(ctx, ensembleStartLimit); err != nil {
			break
		}
		if id := e.leader(); id != 0 {
			return fmt.Sprintf("@ok %d", id)
		}
		err = errors.New("no member is the leader")
	case len(f) == 1 && f[0] == "wait":
		err = e.waitServing(ctx, ensembleStartLimit)
	case len(f) == 2:
		err = e.act(ctx, f[0], f[1])
	default:
		err = fmt.Errorf("bad control command %q", command)
	}
	if err != nil {
		return "@error " + err.Error()
	}
	return "@ok"
}

// act carries out verb on the member named by id.
func (e *ensemble) act(ctx context.Context, verb, id string) error {
	n, err := strconv.Atoi(id)
	if err != nil || n < 1 || n > len(e.members) {
		return fmt.Errorf("no member %q", id)
	}
	m := e.members[n-1]
	switch verb {
	case "kill":
		m.proc.Kill()
		m.stopped = false
		return nil
	case "stop":
		m.stopped = true
		return m.proc.Signal(syscall.SIGSTOP)
	case "cont":
		m.stopped = false
		return m.proc.Signal(syscall.SIGCONT)
	case "restart":
		return e.restart(ctx, m)
	}
	return fmt.Errorf("unknown control command %q", verb)
}

// restart starts member m again on its configuration and data directory.
func (e *ensemble) restart(ctx context.Context, m *member) error {
	if !m.proc.Exited() {
		m.proc.Kill()
	}
	m.stopped = false
	p, err := procgroup.Start(m.argv, procgroup.Options{Dir: m.home, Log: filepath.Join(m.home, "server.log")})
	if err != nil {
		return fmt.Errorf("restart member %d: %w", m.id, err)
	}
	m.proc = p
	if err := e.waitServing(ctx, ensembleStartLimit); err != nil {
		return fmt.Errorf("restart member %d: %w", m.id, err)
	}
	return nil
}

// checkQuorumTLS checks that every member's election port, where members
// of both kinds listen, completes a TLS handshake with a certificate of the
// suite's CA and verifies as the suite's server: the members really talk
// TLS to each other and not plaintext.
func (e *ensemble) checkQuorumTLS() error {
	cfg, err := e.quorum.clientTLS("alice")
	if err != nil {
		return err
	}
	for _, m := range e.members {
		addr := fmt.Sprintf("127.0.0.1:%d", m.electionPort)
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
		if err != nil {
			return fmt.Errorf("quorum TLS: member %d's election port %s: %w", m.id, addr, err)
		}
		c.Close()
	}
	return nil
}

// memberLogLines is how many last lines of each member's log a failed
// ensemble scenario prints.
const memberLogLines = 12

// memberLogTails returns the last n lines of the log of each member of the
// ensemble under dir, each prefixed with the member's name, so that a
// failure in CI shows why a member misbehaved after its work directory is
// gone.
func memberLogTails(dir string, n int) []string {
	logs, _ := filepath.Glob(filepath.Join(dir, "member*", "server.log"))
	var out []string
	for _, path := range logs {
		name := filepath.Base(filepath.Dir(path))
		data, err := os.ReadFile(path)
		if err != nil {
			out = append(out, fmt.Sprintf("%s log: %v", name, err))
			continue
		}
		out = append(out, indent(name+" log| ", splitLines(tail(string(data), n)))...)
	}
	return out
}
