package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// scenario is one client program run against one server. Its stdout is the
// transcript; it exits 0 when every check passed.
type scenario struct {
	name    string // client/feature
	timeout time.Duration
	argv    func(addr string) []string
	// ensemble scenarios run against a fresh ensemble of ensembleSize
	// members (addr is then their connect string) and may act on the
	// members through control lines (see control.go, ensemble.go).
	ensemble  bool
	readOnly  bool // the ensemble's members run with read-only mode enabled
	quorumTLS bool // the ensemble's members talk over TLS (sslQuorum)
	// secure scenarios run against the secured standalone server's
	// TLS-only port (addr), with the key material's directory in keysEnv.
	secure bool
	// noSASL scenarios run against the standalone server without a SASL
	// login (no JAAS file).
	noSASL bool
}

// flavour is which standalone server a scenario runs against: the plain
// one, the secured one or the one without a SASL login. It names the
// server in the runner's map (serverKey) and its home directory.
type flavour string

const (
	plainServer   flavour = ""
	securedServer flavour = "secure"
	noSASLServer  flavour = "nosasl"
)

// flavour is the standalone server sc runs against (ensemble scenarios
// start their own).
func (sc scenario) flavour() flavour {
	switch {
	case sc.secure:
		return securedServer
	case sc.noSASL:
		return noSASLServer
	}
	return plainServer
}

// Scenario names of the programs that take a scenario argument. They must
// match the names the programs accept (kazoo/scenarios.py,
// java/JavaCompat.java, goclient/main.go). Their "kerberos" scenarios need
// a KDC: test/kerberos_test.go runs them, not the runner.
var (
	kazooScenarios = []string{"crud", "transaction", "acl", "precedence", "session",
		"fourletter", "lock", "rwlock", "election", "barrier", "doublebarrier", "queue",
		"lockingqueue", "counter", "party", "childrenwatch", "datawatch", "treecache",
		"ensemble-kill", "ensemble-readonly", "tls", "sasl", "nosasl"}
	javaScenarios = []string{"api", "session-resume", "session-expiry", "sasl", "tls",
		"ensemble-kill-leader", "ensemble-kill-follower", "ensemble-readonly",
		"ensemble-quorumtls"}
	curatorScenarios = []string{"mutex", "rwlock", "leaderlatch", "leaderselector", "queue",
		"doublebarrier", "sharedcount", "curatorcache", "persistentnode",
		"persistentttlnode", "containers", "ensemble-quorum-loss"}
	goScenarios = []string{"crud", "multi", "watches", "acl", "lock", "ensemble-kill"}
)

// A scenario named client/ensemble-... runs against a fresh ensemble; one
// whose name also ends in -readonly gets members with read-only mode on,
// one ending in -quorumtls members with TLS between them. A scenario named
// client/tls or client/tls-... runs against the secured server; ending in
// -sasl, its Java client also logs in with DIGEST-MD5 (keys.scenarioEnv).
// A scenario named client/nosasl runs against a standalone server without
// a SASL login.
const (
	ensemblePrefix  = "ensemble-"
	readOnlySuffix  = "-readonly"
	quorumTLSSuffix = "-quorumtls"
	secureFeature   = "tls"
	saslSuffix      = "-sasl" // a secured scenario that also logs in with DIGEST-MD5
	noSASLFeature   = "nosasl"
	ensembleTimeout = 150 * time.Second
)

// markEnsemble sets sc's ensemble and secured fields from its name.
func markEnsemble(sc scenario) scenario {
	_, feature, _ := strings.Cut(sc.name, "/")
	if strings.HasPrefix(feature, ensemblePrefix) {
		sc.ensemble = true
		sc.readOnly = strings.HasSuffix(feature, readOnlySuffix)
		sc.quorumTLS = strings.HasSuffix(feature, quorumTLSSuffix)
		sc.timeout = ensembleTimeout
	}
	sc.secure = feature == secureFeature || strings.HasPrefix(feature, secureFeature+"-")
	sc.noSASL = feature == noSASLFeature
	return sc
}

// scenarios lists every scenario in run order: zkCli, the Java client API,
// Curator, C client, kazoo, go-zookeeper.
func scenarios(root string, a artifacts) ([]scenario, error) {
	compat := filepath.Join(root, "test", "compat")
	driver := filepath.Join(compat, "clidriver.py")
	var out []scenario

	zkcli, err := scripts(filepath.Join(compat, "zkcli"))
	if err != nil {
		return nil, err
	}
	for _, script := range zkcli {
		out = append(out, scenario{
			name:    "zkcli/" + strings.TrimSuffix(filepath.Base(script), ".script"),
			timeout: 90 * time.Second,
			argv: func(addr string) []string {
				return []string{systemPython, driver, "--script", script,
					"--event", `^WatchedEvent `, "--drop", `^(WATCHER::|SLF4J:)`,
					"--", zkCliScript, "-server", addr, "-waitforconnection"}
			},
		})
	}

	classpath := a.classes + ":" + strings.Join(javaClasspath, ":")
	javaArgv := func(name string) func(string) []string {
		return func(addr string) []string {
			return []string{"java", "-Xmx256m", "-cp", classpath, "JavaCompat", addr, name}
		}
	}
	for _, name := range javaScenarios {
		out = append(out, scenario{name: "java/" + name, timeout: 90 * time.Second, argv: javaArgv(name)})
	}
	for _, name := range curatorScenarios {
		out = append(out, scenario{name: "curator/" + name, timeout: 90 * time.Second, argv: javaArgv(name)})
	}

	cscripts, err := scripts(filepath.Join(compat, "cclient"))
	if err != nil {
		return nil, err
	}
	for _, script := range cscripts {
		out = append(out, scenario{
			name:    "cclient/" + strings.TrimSuffix(filepath.Base(script), ".script"),
			timeout: 60 * time.Second,
			argv: func(addr string) []string {
				return []string{systemPython, driver, "--script", script,
					"--event", `^(Watcher |Got a new session id)`, "--drop", `^(time = \d+ msec|Creating \[.*\] node \(mode: \d\))$`,
					"--", cliMt, "-h", addr}
			},
		})
	}

	kazoo := filepath.Join(compat, "kazoo", "scenarios.py")
	for _, name := range kazooScenarios {
		out = append(out, scenario{
			name:    "kazoo/" + name,
			timeout: 60 * time.Second,
			argv: func(addr string) []string {
				return []string{systemPython, kazoo, addr, name}
			},
		})
	}

	for _, name := range goScenarios {
		out = append(out, scenario{
			name:    "go/" + name,
			timeout: 60 * time.Second,
			argv: func(addr string) []string {
				return []string{a.goclient, addr, name}
			},
		})
	}
	for i := range out {
		out[i] = markEnsemble(out[i])
	}
	return out, nil
}

// scripts lists the *.script files of dir, sorted.
func scripts(dir string) ([]string, error) {
	found, err := filepath.Glob(filepath.Join(dir, "*.script"))
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no *.script files in %s", dir)
	}
	sort.Strings(found)
	return found, nil
}

// outcome is the result of one scenario against one server.
type outcome struct {
	transcript string // stdout
	stderr     string
	err        error // nil when the program exited 0
	elapsed    time.Duration
	// memberLogs holds the last lines of each member's log when an
	// ensemble scenario failed: the work directory is gone after the run.
	memberLogs []string
}

// errTimeout marks a scenario killed at its time limit.
var errTimeout = errors.New("timed out")

// run executes the scenario against addr in its own process group, killed
// as a whole at the time limit or when ctx ends. With a controller, the
// scenario's control lines are carried out and answered on its stdin.
func (s scenario) run(ctx context.Context, dir, addr string, env []string, ctl controller) outcome {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	argv := s.argv(addr)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cw := &controlWriter{ctx: ctx, do: ctl}
	if ctl != nil {
		in, err := cmd.StdinPipe()
		if err != nil {
			return outcome{err: fmt.Errorf("stdin: %w", err)}
		}
		cw.reply = in
		cmd.Stdout = cw
	}
	start := time.Now()
	err := cmd.Run()
	o := outcome{transcript: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctl != nil {
		o.transcript = cw.out.String()
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%w after %v", errTimeout, s.timeout)
	}
	// A scenario's leftover children (a JVM started by zkCli.sh) go with it.
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	o.err = err
	return o
}

// failures returns the transcript's FAIL lines.
func (o outcome) failures() []string {
	var out []string
	for _, l := range splitLines(o.transcript) {
		if strings.HasPrefix(l, "FAIL") {
			out = append(out, l)
		}
	}
	return out
}
