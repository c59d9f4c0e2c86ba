// Command runner is the stock-client compatibility suite of zkserverd.
//
// It installs the Debian clients it needs (zkCli, Curator, cli_mt, kazoo),
// builds zkserverd, starts it standalone on a free loopback port with a
// fresh data directory, runs every scenario (one client program each, see
// scenario.go) and prints one line per scenario, then exactly one final
// line "N passed, M failed". It exits non-zero if anything failed.
//
//	go run ./test/compat/runner               # zkserverd only (make compat)
//	go run ./test/compat/runner -mode diff    # differential (make compat-diff)
//	go run ./test/compat/runner -mode zookeeper -run 'kazoo/.*'
//	go run ./test/compat/runner -mode mirror  # a ZooKeeper observer vs zkserverd mirror (mirror.go)
//
// In diff mode each scenario runs against Apache ZooKeeper 3.8 (Debian's
// jars) and against zkserverd; both transcripts are normalized (zxids,
// session ids, times, ports: see normalize.go) and compared line by line. A
// difference fails the scenario unless test/compat/allowlist.txt covers it
// with a reason that docs/compatibility.md also states.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/zkserverd/zkserverd/test/ports"
)

// Modes.
const (
	modeCompat    = "compat"    // zkserverd only
	modeDiff      = "diff"      // ZooKeeper and zkserverd, compared
	modeZooKeeper = "zookeeper" // ZooKeeper only (checks the scenarios themselves)
)

type options struct {
	mode      string
	run       *regexp.Regexp
	verbose   bool
	keep      bool
	noInstall bool
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout))
}

func realMain(args []string, stdout io.Writer) int {
	opts, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	r := &runner{opts: opts, out: stdout, used: map[string]bool{}, ports: ports.ForCompat()}
	failed, err := r.main(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "runner: %v\n", err)
		fmt.Fprintln(stdout, "0 passed, 1 failed")
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	var o options
	var run string
	fs.StringVar(&o.mode, "mode", modeCompat, "compat (zkserverd), diff (ZooKeeper vs zkserverd), zookeeper (ZooKeeper only) or mirror (a ZooKeeper observer vs zkserverd mirror)")
	fs.StringVar(&run, "run", "", "only scenarios whose name matches this regexp")
	fs.BoolVar(&o.verbose, "v", false, "print every transcript")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (transcripts, server logs)")
	fs.BoolVar(&o.noInstall, "no-install", false, "do not apt-get install missing packages")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch o.mode {
	case modeCompat, modeDiff, modeZooKeeper, modeMirror:
	default:
		return o, fmt.Errorf("-mode %q: want compat, diff, zookeeper or mirror", o.mode)
	}
	re, err := regexp.Compile(run)
	if err != nil {
		return o, fmt.Errorf("-run: %w", err)
	}
	o.run = re
	return o, nil
}

// runner holds one run's state.
type runner struct {
	opts      options
	out       io.Writer
	root      string
	work      string
	kinds     []string // server kinds of the mode, reference first
	zkserverd string   // the built server binary
	allowlist []allowance
	used      map[string]bool // allowlist reasons that covered a difference
	keys      keys            // key material of the secured scenarios, "" if none runs
	// ports picks the servers' ports below the kernel's ephemeral range,
	// where no client's outgoing connection takes one before it is bound.
	ports *ports.Picker
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "# "+format+"\n", args...)
}

// main prepares everything, runs the scenarios and returns how many failed.
func (r *runner) main(ctx context.Context) (int, error) {
	var err error
	if r.root, err = findRoot(); err != nil {
		return 0, err
	}
	if r.opts.mode == modeDiff || r.opts.mode == modeMirror {
		if err := r.loadAllowlist(); err != nil {
			return 0, err
		}
	}
	if !r.opts.noInstall {
		if err := installPackages(ctx, r.logf); err != nil {
			return 0, err
		}
	}
	if r.work, err = os.MkdirTemp("", "zkcompat-"); err != nil {
		return 0, err
	}
	if r.opts.keep {
		defer r.logf("work directory kept: %s", r.work)
	} else {
		defer os.RemoveAll(r.work)
	}
	art, err := build(ctx, r.root, r.work)
	if err != nil {
		return 0, err
	}
	r.zkserverd = art.zkserverd
	all, err := scenarios(r.root, art)
	if err != nil {
		return 0, err
	}
	r.kinds = modeKinds(r.opts.mode)
	if r.needKeys(all) {
		start := time.Now()
		if r.keys, err = makeKeys(ctx, filepath.Join(r.work, "keys")); err != nil {
			return 0, err
		}
		r.logf("key material made in %v: %s", time.Since(start).Round(time.Millisecond), r.keys)
	}
	servers := map[string]*server{}
	if r.opts.mode == modeMirror {
		stop, err := r.startMirrorPair(ctx, servers) // mirror.go
		if err != nil {
			return 0, err
		}
		defer stop()
		return r.runAll(ctx, all, servers), nil
	}
	defer func() {
		for _, s := range servers {
			s.proc.Stop(stopGrace)
		}
	}()
	for _, f := range []flavour{plainServer, securedServer, noSASLServer} {
		if !r.needStandalone(all, f) {
			continue
		}
		if err := r.startServers(ctx, servers, f); err != nil {
			return 0, err
		}
	}
	return r.runAll(ctx, all, servers), nil
}

// modeKinds returns the server kinds a mode runs against, reference first.
func modeKinds(mode string) []string {
	switch mode {
	case modeZooKeeper:
		return []string{kindZooKeeper}
	case modeDiff:
		return []string{kindZooKeeper, kindZkserverd}
	case modeMirror:
		return []string{kindObserver, kindMirror}
	default:
		return []string{kindZkserverd}
	}
}

// selected reports whether sc runs in this run: its name matches -run
// (and in mirror mode it is a plain standalone scenario).
func (r *runner) selected(sc scenario) bool {
	return r.opts.run.MatchString(sc.name) && (r.opts.mode != modeMirror || mirrorModeRuns(sc))
}

// needStandalone reports whether a selected scenario runs against the
// standalone servers of flavour f (ensemble scenarios start their own).
func (r *runner) needStandalone(all []scenario, f flavour) bool {
	for _, sc := range all {
		if r.selected(sc) && !sc.ensemble && sc.flavour() == f {
			return true
		}
	}
	return false
}

// needKeys reports whether a selected scenario needs key material.
func (r *runner) needKeys(all []scenario) bool {
	for _, sc := range all {
		if r.selected(sc) && (sc.secure || sc.quorumTLS) {
			return true
		}
	}
	return false
}

// serverKey is the key of a standalone server in the runner's map, and
// the name of its home directory: its kind, suffixed by its flavour
// unless plain.
func serverKey(kind string, f flavour) string {
	if f == plainServer {
		return kind
	}
	return kind + "-" + string(f)
}

func (r *runner) loadAllowlist() error {
	path := filepath.Join(r.root, "test", "compat", "allowlist.txt")
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	list, err := parseAllowlist(f)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(filepath.Join(r.root, "docs", "compatibility.md"))
	if err != nil {
		return err
	}
	if err := checkReasons(list, string(doc)); err != nil {
		return err
	}
	r.allowlist = list
	return nil
}

// startServers starts a standalone server of flavour f of each kind of
// the mode into started.
func (r *runner) startServers(ctx context.Context, started map[string]*server, f flavour) error {
	var sec keys
	if f == securedServer {
		sec = r.keys
	}
	for _, k := range r.kinds {
		s, err := startServer(ctx, k, r.work, r.zkserverd, f, sec, r.ports)
		if err != nil {
			return err
		}
		switch f {
		case securedServer:
			r.logf("%s (secured) serving on %s, TLS on %s", k, s.addr, s.secureAddr)
		case noSASLServer:
			r.logf("%s (no SASL login) serving on %s", k, s.addr)
		default:
			r.logf("%s serving on %s", k, s.addr)
		}
		started[serverKey(k, f)] = s
	}
	return nil
}

// runAll runs the selected scenarios, prints a line (and details) for each
// and the final count, and returns the number of failures.
func (r *runner) runAll(ctx context.Context, all []scenario, servers map[string]*server) int {
	passed, failed := 0, 0
	var refFailed []string // mirror mode: failed against the reference too
	start := time.Now()
	for _, sc := range all {
		if !r.selected(sc) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		v, details := r.runOne(ctx, sc, servers)
		status := "PASS"
		switch {
		case v == verdictPass:
			passed++
		case v == verdictReferenceFails && r.opts.mode == modeMirror:
			status = "XFAIL"
			refFailed = append(refFailed, sc.name)
		default:
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(r.out, "%s  %s\n", status, sc.name)
		for _, d := range details {
			fmt.Fprintln(r.out, d)
		}
	}
	if ctx.Err() != nil {
		r.logf("interrupted")
		failed++
	}
	for _, a := range r.allowlist {
		if !r.used[a.reason] {
			r.logf("allowlist entry at line %d (%s) was not needed in this run", a.line, a.reason)
		}
	}
	if len(refFailed) > 0 {
		r.logf("%d fail against the ZooKeeper observer too (XFAIL, not counted: they expect a standalone server): %s",
			len(refFailed), strings.Join(refFailed, " "))
	}
	r.logf("%d scenarios in %v (mode %s)", passed+failed+len(refFailed), time.Since(start).Round(time.Second), r.opts.mode)
	fmt.Fprintf(r.out, "%d passed, %d failed\n", passed, failed)
	return failed
}

// verdict is how a scenario ended.
type verdict int

const (
	verdictPass           verdict = iota
	verdictFail                   // the server under test failed it, or the transcripts differ
	verdictReferenceFails         // it failed against the reference (two kinds) as well
)

// runOne runs sc against every server kind and judges the result.
func (r *runner) runOne(ctx context.Context, sc scenario, servers map[string]*server) (verdict, []string) {
	results := make([]outcome, len(r.kinds))
	for i, kind := range r.kinds {
		switch {
		case sc.ensemble:
			results[i] = r.runEnsemble(ctx, sc, kind)
		case sc.secure:
			results[i] = sc.run(ctx, r.root, servers[serverKey(kind, securedServer)].secureAddr, r.keys.scenarioEnv(strings.HasSuffix(sc.name, saslSuffix)), nil)
		default:
			results[i] = sc.run(ctx, r.root, servers[serverKey(kind, sc.flavour())].addr, nil, nil)
		}
		r.save(sc, kind, results[i])
	}
	var details []string
	ok := true
	for i, kind := range r.kinds {
		o := results[i]
		label := ""
		if len(r.kinds) > 1 {
			label = kind + ": "
		}
		if r.opts.verbose {
			details = append(details, indent("    "+label+"| ", splitLines(o.transcript))...)
		}
		if o.err == nil {
			continue
		}
		ok = false
		details = append(details, fmt.Sprintf("    %s%v (%v)", label, o.err, o.elapsed.Round(time.Millisecond)))
		switch {
		case kind == kindZooKeeper && r.opts.mode == modeDiff:
			details = append(details, "    (fails against Apache ZooKeeper too: the scenario itself is wrong)")
		case kind == kindObserver:
			details = append(details, "    (fails against the ZooKeeper observer: the scenario expects a standalone server, not a mirror failure)")
		}
		fails := o.failures()
		details = append(details, indent("    "+label, fails)...)
		if len(fails) == 0 {
			details = append(details, indent("    "+label+"stderr: ", splitLines(tail(o.stderr, 15)))...)
		}
		details = append(details, indent("    "+label, o.memberLogs)...)
	}
	switch {
	case len(r.kinds) == 2 && sc.ensemble:
		// Which member is killed or leads differs from run to run.
		details = append(details, "    (ensemble scenario: transcripts not compared)")
	case len(r.kinds) == 2:
		same, d := r.compare(sc, results[0], results[1])
		ok = ok && same
		details = append(details, d...)
	}
	return judge(ok, results), details
}

// judge returns the verdict of a scenario from its outcomes, reference
// first, and whether everything passed and compared equal (ok).
func judge(ok bool, results []outcome) verdict {
	switch {
	case ok:
		return verdictPass
	case len(results) == 2 && results[0].err != nil:
		return verdictReferenceFails
	}
	return verdictFail
}

// runEnsemble starts a fresh ensemble of kind for sc, runs sc against it
// with its control commands and stops the ensemble.
func (r *runner) runEnsemble(ctx context.Context, sc scenario, kind string) outcome {
	dir := filepath.Join(r.work, "ensembles", kind, strings.ReplaceAll(sc.name, "/", "_"))
	start := time.Now()
	var quorum keys
	if sc.quorumTLS {
		quorum = r.keys
	}
	failed := func(err error) outcome {
		return outcome{err: err, elapsed: time.Since(start), memberLogs: memberLogTails(dir, memberLogLines)}
	}
	e, err := startEnsemble(ctx, kind, dir, r.zkserverd, sc.readOnly, quorum, r.ports)
	if err != nil {
		return failed(err)
	}
	defer e.stop()
	if sc.quorumTLS {
		if err := e.checkQuorumTLS(); err != nil {
			return failed(err)
		}
	}
	if r.opts.verbose {
		r.logf("%s: %s ensemble serving on %s after %v", sc.name, kind, e.connectString(), time.Since(start).Round(time.Millisecond))
	}
	o := sc.run(ctx, r.root, e.connectString(), nil, e.control)
	if o.err != nil {
		o.memberLogs = memberLogTails(dir, memberLogLines)
	}
	return o
}

// compare diffs the normalized transcripts of ZooKeeper (a) and zkserverd (b).
func (r *runner) compare(sc scenario, a, b outcome) (bool, []string) {
	hunks := diffLines(splitLines(normalize(a.transcript)), splitLines(normalize(b.transcript)))
	var details []string
	same := true
	var reasons []string
	for _, h := range hunks {
		if ok, why := allowed(r.allowlist, sc.name, h); ok {
			for _, w := range why {
				reasons = appendNew(reasons, w)
				r.used[w] = true
			}
			continue
		}
		if same {
			left, right := "Apache ZooKeeper 3.8", "zkserverd"
			if r.opts.mode == modeMirror {
				left, right = "ZooKeeper 3.8 observer", "zkserverd mirror"
			}
			details = append(details, fmt.Sprintf("      %-60s | %s", left+" (normalized)", right+" (normalized)"))
		}
		same = false
		details = append(details, fmt.Sprintf("    @ line %d", h.at))
		details = append(details, strings.Split(strings.TrimRight(sideBySide(h, 60), "\n"), "\n")...)
	}
	for _, w := range reasons {
		details = append(details, "    allowed difference: "+w)
	}
	return same, details
}

// save writes a transcript and its stderr under work/transcripts/<kind>/.
func (r *runner) save(sc scenario, kind string, o outcome) {
	dir := filepath.Join(r.work, "transcripts", kind)
	base := filepath.Join(dir, strings.ReplaceAll(sc.name, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	os.WriteFile(base+".txt", []byte(o.transcript), 0o644)
	os.WriteFile(base+".normalized.txt", []byte(normalize(o.transcript)), 0o644)
	os.WriteFile(base+".stderr.txt", []byte(o.stderr), 0o644)
}

func indent(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}
