package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/procgroup"
	"github.com/zkserverd/zkserverd/internal/zkproc"
	"github.com/zkserverd/zkserverd/test/ports"
)

// gateEnv turns the scenarios on (`make migrate`); without it they skip.
// binEnv names a zkserverd binary to run instead of building one. keepEnv
// names a directory to keep each scenario's files in (the clients' event
// logs, the mirrors' and ZooKeeper's logs) instead of a temporary one.
const (
	gateEnv = "ZKSERVERD_MIGRATE"
	binEnv  = "ZKSERVERD_MIGRATE_BIN"
	keepEnv = "ZKSERVERD_MIGRATE_KEEP"
	// logLevelEnv sets the mirrors' --log-level (default info).
	logLevelEnv = "ZKSERVERD_MIGRATE_LOG_LEVEL"
)

// The clients' parameters: the session timeout they ask for (ZooKeeper's
// and the takeover configuration's maxSessionTimeout allow it) and their
// writers' interval.
const (
	sessionMs  = 15000
	intervalMs = 20
	base       = "/migrate"
)

// writers are the client programs, each writing under base/w/NAME.
var writers = []string{"curator", "kazoo"}

// javaClasspath is the Debian jars the Curator program needs (the compat
// suite's list, test/compat/runner/env.go).
var javaClasspath = []string{
	"/usr/share/java/curator-recipes.jar", "/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar", "/usr/share/java/zookeeper.jar",
	"/usr/share/java/zookeeper-jute.jar", "/usr/share/java/netty-codec.jar",
	"/usr/share/java/netty-resolver.jar", "/usr/share/java/guava.jar",
	"/usr/share/java/slf4j-api.jar", "/usr/share/java/slf4j-simple.jar",
}

const systemPython = "/usr/bin/python3"

// requireMigrate gates the long form: it skips without gateEnv, and
// fails when what it needs is missing.
func requireMigrate(t *testing.T) {
	t.Helper()
	if os.Getenv(gateEnv) != "1" {
		t.Skipf("the migration scenarios run with %s=1 (make migrate)", gateEnv)
	}
	zkproc.Require(t)
	if missing := missingClients(); missing != "" {
		t.Fatalf("the migration clients cannot run: %s (make migrate installs them)", missing)
	}
}

// missingClients says what the client programs lack here ("" if nothing):
// javac, a Curator jar, kazoo for the system Python.
func missingClients() string {
	var missing []string
	if _, err := exec.LookPath("javac"); err != nil {
		missing = append(missing, "javac")
	}
	for _, jar := range javaClasspath {
		if _, err := os.Stat(jar); err != nil {
			missing = append(missing, jar)
		}
	}
	if err := exec.Command(systemPython, "-c", "import kazoo").Run(); err != nil {
		missing = append(missing, "kazoo for "+systemPython)
	}
	return strings.Join(missing, ", ")
}

// missingFeatures says which of the migration's command-line features
// the zkserverd binary lacks ("" if none).
func (w *world) missingFeatures() string {
	var missing []string
	help, _ := exec.Command(w.art.zkserverd, "mirror", "--help").CombinedOutput()
	for _, flag := range []string{"--client-addr", "--takeover-config"} {
		if !strings.Contains(string(help), flag) {
			missing = append(missing, "mirror "+flag)
		}
	}
	// an unknown command's --help prints the root's help, without --mirror
	if out, _ := exec.Command(w.art.zkserverd, "takeover", "--help").CombinedOutput(); !strings.Contains(string(out), "--mirror") {
		missing = append(missing, "the takeover command")
	}
	return strings.Join(missing, ", ")
}

// artifacts are the programs one scenario runs.
type artifacts struct {
	zkserverd string
	classes   string // MigrateClient.class
}

// build compiles zkserverd (unless binEnv names one) and the Curator
// client into a temporary directory.
func build(t *testing.T) artifacts {
	t.Helper()
	dir := t.TempDir()
	a := artifacts{zkserverd: filepath.Join(dir, "zkserverd"), classes: filepath.Join(dir, "classes")}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	steps := [][]string{
		{"go", "build", "-o", a.zkserverd, "./cmd/zkserverd"},
		{"javac", "-nowarn", "-cp", strings.Join(javaClasspath, ":"), "-d", a.classes,
			filepath.Join(root, "test", "migrate", "java", "MigrateClient.java")},
	}
	if bin := os.Getenv(binEnv); bin != "" {
		a.zkserverd, steps = bin, steps[1:]
	}
	for _, argv := range steps {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return a
}

// picker adapts test/ports to zkproc.
type picker struct{ p *ports.Picker }

func (p picker) Pick() (int, error) { return p.p.Pick() }

// world is one scenario's processes: ZooKeeper, the mirrors, the clients.
type world struct {
	t       *testing.T
	dir     string
	art     artifacts
	ports   *ports.Picker
	zk      *zkproc.Ensemble
	zkCfg   string    // the ensemble's server lines, for the mirrors
	mirrors []*mirror // sids 4, 5, 6
}

// mirrorIDs are the mirrors' sids; ZooKeeper's configuration lists them
// as observers from the start, so no reconfig is needed.
var mirrorIDs = []int64{4, 5, 6}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), art: build(t), ports: ports.ForMigrate()}
	if keep := os.Getenv(keepEnv); keep != "" {
		w.dir = filepath.Join(keep, t.Name())
		if err := os.RemoveAll(w.dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("keeping the scenario's files in %s", w.dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := zkproc.Launch(ctx, zkproc.Spec{
		Dir: filepath.Join(w.dir, "zookeeper"), Voters: []int64{1, 2, 3}, Outside: mirrorIDs,
		Ports: picker{w.ports}, ExtraConfig: []string{"maxSessionTimeout=40000"},
		// The mirrors' observer lines carry their client addresses, so
		// Curator's ensemble tracker, which rewrites its connect string
		// from /zookeeper/config, keeps them.
		OutsideClientPorts: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	w.zk = e
	var cfg strings.Builder
	for _, m := range e.Members() {
		fmt.Fprintf(&cfg, "server.%d=%s\n", m.ID, m.Line())
	}
	w.zkCfg = filepath.Join(w.dir, "zookeeper.cfg")
	if err := os.WriteFile(w.zkCfg, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	w.planMirrors()
	return w
}

// planMirrors picks every mirror's ports and writes its takeover
// configuration: the zkserverd ensemble of sids 4-6, each serving clients
// on the port its observer line in ZooKeeper's configuration names, where
// it served them as a mirror.
func (w *world) planMirrors() {
	type peer struct{ quorum, election int }
	peers := map[int64]peer{}
	for _, id := range mirrorIDs {
		peers[id] = peer{w.ports.Free(w.t), w.ports.Free(w.t)}
	}
	for _, id := range mirrorIDs {
		m := &mirror{
			id: id, status: "127.0.0.1:" + strconv.Itoa(w.ports.Free(w.t)),
			client: w.zk.Member(id).ClientAddr(),
			log:    filepath.Join(w.dir, fmt.Sprintf("mirror%d.log", id)),
			cfg:    filepath.Join(w.dir, fmt.Sprintf("takeover%d.cfg", id)),
		}
		_, port, _ := strings.Cut(m.client, ":")
		lines := []string{
			"tickTime=500", "initLimit=20", "syncLimit=10", "maxSessionTimeout=40000",
			"dataDir=" + filepath.Join(w.dir, fmt.Sprintf("takeover%d", id)),
			"clientPortAddress=127.0.0.1", "clientPort=" + port,
			"4lw.commands.whitelist=*", "admin.enableServer=false",
		}
		for _, pid := range mirrorIDs {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", pid, peers[pid].quorum, peers[pid].election))
		}
		if err := os.WriteFile(m.cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			w.t.Fatal(err)
		}
		w.mirrors = append(w.mirrors, m)
	}
}

// connectString lists the ZooKeeper voters and the mirrors' client ports:
// what a client of a migrating ensemble is given.
func (w *world) connectString() string {
	addrs := w.zk.ClientAddrs()
	for _, m := range w.mirrors {
		addrs = append(addrs, m.client)
	}
	return strings.Join(addrs, ",")
}

// mirror is one `zkserverd mirror` process.
type mirror struct {
	id             int64
	status, client string
	log, cfg       string
	proc           *procgroup.Process
	serve          bool // started with --client-addr
}

// startMirror starts the mirror; with serve, it serves clients on its
// client port while it mirrors (--client-addr), else only after the
// switch.
func (w *world) startMirror(m *mirror, serve bool) {
	w.t.Helper()
	argv := []string{w.art.zkserverd, "mirror", "--ensemble", w.zkCfg, "--myid", strconv.FormatInt(m.id, 10),
		"--status-addr", m.status, "--takeover-config", m.cfg}
	if serve {
		argv = append(argv, "--client-addr", m.client)
	}
	if level := os.Getenv(logLevelEnv); level != "" {
		argv = append(argv, "--log-level", level)
	}
	m.serve = serve
	p, err := procgroup.Start(argv, procgroup.Options{Log: m.log})
	if err != nil {
		w.t.Fatalf("start mirror %d: %v", m.id, err)
	}
	m.proc = p
	w.t.Cleanup(func() { p.Stop(10 * time.Second) })
}

// startMirrors starts every mirror and waits until each is ready.
func (w *world) startMirrors(serve bool, within time.Duration) {
	w.t.Helper()
	for _, m := range w.mirrors {
		w.startMirror(m, serve)
	}
	for _, m := range w.mirrors {
		w.waitReady(m, within)
	}
}

// waitReady waits until the mirror's GET /ready says 200.
func (w *world) waitReady(m *mirror, within time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if ready(m.status) {
			return
		}
		if m.proc.Exited() {
			w.t.Fatalf("mirror %d exited before it was ready; log %s:\n%s", m.id, m.log, tailFile(m.log, 40))
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("mirror %d not ready within %v: %v; log:\n%s", m.id, within, status(m.status), tailFile(m.log, 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ready(addr string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// status returns the mirror's GET /mirror, or the error.
func status(addr string) map[string]any {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/mirror")
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	defer resp.Body.Close()
	var s map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return map[string]any{"error": err.Error()}
	}
	return s
}

// client is one client program.
type client struct {
	name  string
	out   string // its stdout: the events
	proc  *procgroup.Process
	stdin io.WriteCloser
}

// startClients starts the Curator and the kazoo client on connect and
// waits until each holds its recipes and watch (its first "held" line).
func (w *world) startClients(connect string) []*client {
	w.t.Helper()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	argvs := map[string][]string{
		"curator": {"java", "-Xmx128m", "-XX:+UseSerialGC",
			// the ZooKeeper client's own log: on stderr, with the events
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS", "-cp", w.art.classes + ":" + strings.Join(javaClasspath, ":"),
			"MigrateClient", connect, "curator", base, strconv.Itoa(sessionMs), strconv.Itoa(intervalMs)},
		"kazoo": {systemPython, filepath.Join(root, "test", "migrate", "kazoo", "migrate_client.py"),
			connect, "kazoo", base, strconv.Itoa(sessionMs), strconv.Itoa(intervalMs)},
	}
	var cs []*client
	for _, name := range writers {
		c := &client{name: name, out: filepath.Join(w.dir, name+".jsonl")}
		p, err := procgroup.Start(argvs[name], procgroup.Options{Log: c.out, Stdin: true})
		if err != nil {
			w.t.Fatalf("start %s: %v", name, err)
		}
		c.proc, c.stdin = p, p.Stdin()
		w.t.Cleanup(func() { p.Stop(5 * time.Second) })
		cs = append(cs, c)
	}
	for _, c := range cs {
		w.waitEvent(c, "held", 2*time.Minute)
	}
	return cs
}

// waitEvent waits until the client printed an event ev.
func (w *world) waitEvent(c *client, ev string, within time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for {
		evs, _ := readEvents(c.out)
		for _, e := range evs {
			if e.Ev == ev {
				return
			}
		}
		if c.proc.Exited() || time.Now().After(deadline) {
			w.t.Fatalf("%s printed no %q event (exited=%v); its output:\n%s", c.name, ev, c.proc.Exited(), tailFile(c.out, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopClients closes their stdin (each prints its final line and exits)
// and returns their events; a client that fails to exit cleanly fails the
// test.
func (w *world) stopClients(cs []*client) map[string][]Event {
	w.t.Helper()
	for _, c := range cs {
		c.stdin.Close()
	}
	logs := map[string][]Event{}
	for _, c := range cs {
		select {
		case <-c.proc.Done():
		case <-time.After(30 * time.Second):
			w.t.Errorf("%s did not exit within 30 s of its stdin closing", c.name)
			c.proc.Stop(time.Second)
		}
		if err := c.proc.Wait(); err != nil {
			w.t.Errorf("%s exited: %v; its output:\n%s", c.name, err, tailFile(c.out, 30))
		}
		evs, other := readEvents(c.out)
		if len(other) > 0 {
			w.t.Logf("%s printed %d other lines, the last: %s", c.name, len(other), strings.Join(tail(other, 3), "\n"))
		}
		if errs := errorLines(other, 5); len(errs) > 0 {
			w.t.Logf("%s's first error lines: %s", c.name, strings.Join(errs, "\n"))
		}
		logs[c.name] = evs
	}
	return logs
}

func readEvents(path string) ([]Event, []string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []string{err.Error()}
	}
	defer f.Close()
	evs, other, err := ParseEvents(f)
	if err != nil {
		return nil, append(other, err.Error())
	}
	return evs, other
}

// connect opens a go-zookeeper session on addrs.
func connect(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(addrs, 20*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// retry runs op until it succeeds or a minute has passed (a session on
// a server that just started, or a connection moving, fails for a while).
func retry[T any](t *testing.T, what string, op func() (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, err := op()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// holdings reads, for each client, the owners of its ephemeral node and
// of its recipes' nodes.
func holdings(t *testing.T, conn *zk.Conn) map[string]Holding {
	t.Helper()
	out := map[string]Holding{}
	owners := func(dir string) []int64 {
		names := retry(t, "children of "+dir, func() ([]string, error) {
			names, _, err := conn.Children(dir)
			return names, err
		})
		var ids []int64
		for _, n := range names {
			st := retry(t, "stat of "+dir+"/"+n, func() (*zk.Stat, error) {
				_, st, err := conn.Exists(dir + "/" + n)
				return st, err
			})
			if st != nil {
				ids = append(ids, st.EphemeralOwner)
			}
		}
		return ids
	}
	for _, name := range writers {
		st := retry(t, "stat of the ephemeral", func() (*zk.Stat, error) {
			_, st, err := conn.Exists(base + "/eph/" + name)
			return st, err
		})
		h := Holding{Lock: owners(base + "/lock/" + name), Leader: owners(base + "/leader/" + name)}
		if st != nil {
			h.Ephemeral = st.EphemeralOwner
		}
		out[name] = h
	}
	return out
}

// readTree reads every node under the writers' directories: path to data.
func readTree(t *testing.T, conn *zk.Conn) map[string]string {
	t.Helper()
	tree := map[string]string{}
	var mu sync.Mutex // guards tree
	for _, name := range writers {
		dir := base + "/w/" + name
		names := retry(t, "children of "+dir, func() ([]string, error) {
			names, _, err := conn.Children(dir)
			return names, err
		})
		work := make(chan string)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range work {
					data := retry(t, "read "+p, func() ([]byte, error) {
						data, _, err := conn.Get(p)
						return data, err
					})
					mu.Lock()
					tree[p] = string(data)
					mu.Unlock()
				}
			}()
		}
		for _, n := range names {
			work <- dir + "/" + n
		}
		close(work)
		wg.Wait()
	}
	return tree
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return strings.Join(tail(strings.Split(strings.TrimRight(string(b), "\n"), "\n"), n), "\n")
}

// errorLines returns the first n lines naming an error (a Python
// exception, a RuntimeError, the Java client's ERROR lines).
func errorLines(lines []string, n int) []string {
	var out []string
	for _, l := range lines {
		if len(out) < n && (strings.Contains(l, "Error:") || strings.Contains(l, " ERROR ") || strings.Contains(l, "Unhandled")) {
			out = append(out, l)
		}
	}
	return out
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}
