package migrate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkproc"
)

// pauseGoal is the write pause at the switch the issue aims for on this
// machine; it is reported, not enforced.
const pauseGoal = 2 * time.Second

// scenario is one run of the proof.
type scenario struct {
	// preload znodes are written before the mirrors start (100 per
	// directory under base/data), so the mirrors sync them by snapshot.
	preload int
	// mirrors runs the mirrors (and the takeover); without them the switch
	// is the dry run's ZooKeeper leader restart.
	mirrors bool
	// serve has the mirrors serve clients while they mirror
	// (--client-addr); without it the clients reach them only once they
	// are zkserverd members, on the same ports.
	serve bool
	// disrupt runs while the clients run and the mirrors follow, before
	// the switch.
	disrupt func(w *world)
	// steady is how long the clients run before and after each step.
	steady time.Duration
}

// TestMigrateTakeover is the proof: clients hold their recipes and write
// while three mirrors follow ZooKeeper, serve them, and take over.
func TestMigrateTakeover(t *testing.T) {
	requireMigrate(t)
	run(t, scenario{preload: 2000, mirrors: true, serve: true, steady: 5 * time.Second})
}

// TestMigrateTakeoverWithoutServing is the takeover of mirrors that do
// not serve clients while they mirror: the clients stay on ZooKeeper
// until the switch, then move to the members (their connect strings list
// the members' client ports from the start).
func TestMigrateTakeoverWithoutServing(t *testing.T) {
	requireMigrate(t)
	run(t, scenario{preload: 2000, mirrors: true, steady: 5 * time.Second})
}

// TestMigrateZooKeeperLeaderDies kills the ZooKeeper leader while the
// mirrors follow (and serve), before the takeover.
func TestMigrateZooKeeperLeaderDies(t *testing.T) {
	requireMigrate(t)
	run(t, scenario{preload: 2000, mirrors: true, serve: true, steady: 5 * time.Second, disrupt: killZooKeeperLeader})
}

// TestMigrateMirrorRestarts kills a mirror mid-mirror and starts it again
// (it syncs anew) before the takeover.
func TestMigrateMirrorRestarts(t *testing.T) {
	requireMigrate(t)
	run(t, scenario{preload: 2000, mirrors: true, serve: true, steady: 5 * time.Second, disrupt: restartMirror})
}

// TestMigrateLargeSnapshot has the mirrors join after 100k+ znodes are in
// ZooKeeper: they sync by a snapshot that large, then take over.
func TestMigrateLargeSnapshot(t *testing.T) {
	requireMigrate(t)
	run(t, scenario{preload: 100_500, mirrors: true, serve: true, steady: 5 * time.Second})
}

// TestMigrateDryRun runs the clients and the checker against ZooKeeper
// alone, the switch being a restart of ZooKeeper's leader: it proves the
// harness (the clients survive a leader change, and the checker passes on
// a correct ensemble).
func TestMigrateDryRun(t *testing.T) {
	requireMigrate(t)
	run(t, scenario{preload: 2000, steady: 5 * time.Second})
}

// TestQuickMigration is the quick form in the normal suite: the takeover
// with serving mirrors, 500 preloaded znodes and shorter steady phases.
// It skips where ZooKeeper, Curator or kazoo is missing, and fails
// instead when ZKSERVERD_REQUIRE_ZOOKEEPER=1 (CI, which installs them).
func TestQuickMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("launches ZooKeeper, three mirrors and two client programs")
	}
	zkproc.Require(t)
	if missing := missingClients(); missing != "" {
		msg := fmt.Sprintf("the migration clients cannot run here: %s (make migrate installs them)", missing)
		if os.Getenv(zkproc.RequireEnv) == "1" {
			t.Fatalf("%s=1, but %s", zkproc.RequireEnv, msg)
		}
		t.Skip(msg)
	}
	run(t, scenario{preload: 500, mirrors: true, serve: true, steady: 3 * time.Second})
}

func run(t *testing.T, sc scenario) {
	w := newWorld(t)
	if sc.mirrors {
		if missing := w.missingFeatures(); missing != "" {
			t.Fatalf("this zkserverd lacks %s, which the migration needs", missing)
		}
	}
	preload(t, w, sc.preload)
	if sc.mirrors {
		began := time.Now()
		w.startMirrors(sc.serve, 5*time.Minute)
		t.Logf("mirrors ready in %v: %s", time.Since(began).Round(time.Millisecond), w.mirrorSummary())
		checkMirrorsMatch(t, w)
	}
	cs := w.startClients(w.connectString())
	time.Sleep(sc.steady)
	if sc.disrupt != nil {
		sc.disrupt(w)
		time.Sleep(sc.steady)
	}
	var from, to time.Time
	if sc.mirrors {
		from, to = takeover(t, w)
	} else {
		from, to = restartZooKeeperLeader(t, w)
	}
	t.Logf("switch took %v", to.Sub(from).Round(time.Millisecond))
	time.Sleep(sc.steady)
	if sc.mirrors {
		t.Logf("members after the switch: %s", w.memberModes())
	}

	addrs := w.zk.ClientAddrs()
	if sc.mirrors {
		addrs = nil
		for _, m := range w.mirrors {
			addrs = append(addrs, m.client)
		}
	}
	conn := connect(t, addrs)
	defer conn.Close()
	held := holdings(t, conn)
	logs := w.stopClients(cs)
	tree := readTree(t, conn)
	checkPreload(t, conn, sc.preload)

	r := Check(Input{
		Logs: logs, Watches: map[string][]string{"curator": writers, "kazoo": writers},
		Tree: tree, Holdings: held, SwitchStart: from, SwitchEnd: to,
	})
	report(t, r, from, to)
	for _, f := range r.Failures {
		t.Error(f)
	}
}

// report logs the figures: writes, disconnections, watch coverage and the
// write pause at the switch against the goal.
func report(t *testing.T, r Report, from, to time.Time) {
	t.Helper()
	for _, name := range writers {
		t.Logf("%s: %d writes acked, %d failed, %d disconnections, %d writes its watch had to report; pause at the switch %v; longest pause %v",
			name, r.Acks[name], r.Errors[name], r.Disconnects[name], r.Watched[name], r.Pause[name], r.Longest[name])
	}
	worst := r.Worst()
	verdict := "within"
	if worst.Length >= pauseGoal {
		verdict = "OVER"
	}
	t.Logf("WRITE PAUSE AT THE SWITCH: %v, %s the %v goal (switch %s to %s, writers every %d ms, 2 shared cores)",
		worst.Length.Round(time.Millisecond), verdict, pauseGoal,
		from.UTC().Format("15:04:05.000"), to.UTC().Format("15:04:05.000"), intervalMs)
}

// preload writes n znodes under base/data, 1000 to a directory, in multi
// batches.
func preload(t *testing.T, w *world, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	began := time.Now()
	conn := connect(t, w.zk.ClientAddrs())
	defer conn.Close()
	for _, p := range []string{base, base + "/data"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	const perDir, batch = 1000, 500
	dirs := (n + perDir - 1) / perDir
	var ops []any
	for d := range dirs {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/data/d%04d", base, d), Acl: zk.WorldACL(zk.PermAll)})
	}
	for i := range n {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/data/d%04d/n%06d", base, i/perDir, i),
			Data: []byte("preloaded"), Acl: zk.WorldACL(zk.PermAll)})
	}
	// The directories come first, in the first batch; the rest in
	// parallel batches.
	first := min(dirs, len(ops))
	if _, err := conn.Multi(ops[:first]...); err != nil {
		t.Fatalf("preload the directories: %v", err)
	}
	rest := ops[first:]
	work := make(chan []any)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if _, err := conn.Multi(b...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < len(rest); i += batch {
		select {
		case work <- rest[i:min(i+batch, len(rest))]:
		case err := <-errs:
			close(work)
			t.Fatalf("preload: %v", err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("preload: %v", err)
	default:
	}
	t.Logf("preloaded %d znodes in %v", n, time.Since(began).Round(time.Millisecond))
}

// checkPreload counts the preloaded znodes in the final tree.
func checkPreload(t *testing.T, conn *zk.Conn, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	dirs := retry(t, "children of the preload", func() ([]string, error) {
		names, _, err := conn.Children(base + "/data")
		return names, err
	})
	total := 0
	for _, d := range dirs {
		st := retry(t, "stat of "+d, func() (*zk.Stat, error) {
			_, st, err := conn.Exists(base + "/data/" + d)
			return st, err
		})
		total += int(st.NumChildren)
	}
	if total != n {
		t.Errorf("%d preloaded znodes in the final tree, want %d", total, n)
	}
}

// checkMirrorsMatch: before the clients start (nothing writes), every
// mirror has ZooKeeper's last zxid and as many znodes as ZooKeeper
// counts.
func checkMirrorsMatch(t *testing.T, w *world) {
	t.Helper()
	leader, err := w.zk.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	addr := w.zk.Member(leader).ClientAddr()
	zxid := testutil.FourLetterLine(addr, "srvr", "Zxid: ")
	znodes := testutil.FourLetterLine(addr, "mntr", "zk_znode_count\t")
	testutil.Eventually(t, 30*time.Second, "every mirror at ZooKeeper's last zxid", func() bool {
		for _, m := range w.mirrors {
			if fmt.Sprint(status(m.status)["last_zxid"]) != zxid {
				return false
			}
		}
		return true
	})
	for _, m := range w.mirrors {
		if got := fmt.Sprint(status(m.status)["znodes"]); got != znodes {
			t.Logf("mirror %d counts %s znodes, ZooKeeper %s (zk_znode_count)", m.id, got, znodes)
		}
	}
}

func (w *world) mirrorSummary() string {
	return w.mirrorStatuses(func(s map[string]any) string {
		return fmt.Sprintf("zxid %v, %v znodes, %v syncs", s["last_zxid"], s["znodes"], s["syncs"])
	})
}

// mirrorStatuses describes each mirror's GET /mirror with describe.
func (w *world) mirrorStatuses(describe func(map[string]any) string) string {
	var parts []string
	for _, m := range w.mirrors {
		parts = append(parts, fmt.Sprintf("%d: %s", m.id, describe(status(m.status))))
	}
	return strings.Join(parts, "; ")
}

// takeover runs `zkserverd takeover` on every mirror, stops the ZooKeeper
// voters once every mirror is frozen, and waits until the takeover
// command succeeded and every mirror serves as a zkserverd member. It
// returns when the switch began and ended.
func takeover(t *testing.T, w *world) (from, to time.Time) {
	t.Helper()
	argv := []string{"takeover", "--timeout", "2m"}
	for _, m := range w.mirrors {
		argv = append(argv, "--mirror", "http://"+m.status)
	}
	var out bytes.Buffer
	cmd := exec.Command(w.art.zkserverd, argv...)
	cmd.Stdout, cmd.Stderr = &out, &out
	from = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	frozen := func() bool {
		for _, m := range w.mirrors {
			if p := status(m.status)["phase"]; p != "frozen" && p != "switching" && p != "serving" {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	for !frozen() {
		select {
		case err := <-done:
			t.Fatalf("takeover ended before the mirrors froze: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirrors did not freeze within a minute: %s\ntakeover's output:\n%s", w.phases(), out.String())
		}
	}
	froze := time.Now()
	var wg sync.WaitGroup
	for _, id := range []int64{1, 2, 3} {
		wg.Add(1)
		go func() { defer wg.Done(); w.zk.Stop(id) }()
	}
	wg.Wait()
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("takeover failed: %v\n%s\nmirrors: %s", err, out.String(), w.phases())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("takeover did not end within 3 minutes:\n%s", out.String())
	}
	for _, m := range w.mirrors {
		w.waitReady(m, time.Minute)
	}
	to = time.Now()
	t.Logf("takeover: mirrors frozen after %v, ZooKeeper stopped after %v, all serving after %v; its output:\n%s",
		froze.Sub(from).Round(time.Millisecond), stopped.Sub(from).Round(time.Millisecond),
		to.Sub(from).Round(time.Millisecond), out.String())
	return from, to
}

// memberModes is what srvr says each member is.
func (w *world) memberModes() string {
	var parts []string
	for _, m := range w.mirrors {
		mode := testutil.FourLetterLine(m.client, "srvr", "Mode: ")
		parts = append(parts, fmt.Sprintf("%d %s", m.id, mode))
	}
	return strings.Join(parts, ", ")
}

func (w *world) phases() string {
	return w.mirrorStatuses(func(s map[string]any) string {
		return fmt.Sprintf("phase %v reachable %v error %v", s["phase"], s["zookeeper_reachable"], s["error"])
	})
}

// restartZooKeeperLeader is the dry run's switch: ZooKeeper's leader
// stops and starts again, and the ensemble elects a leader.
func restartZooKeeperLeader(t *testing.T, w *world) (from, to time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := w.zk.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from = time.Now()
	if err := w.zk.Stop(leader); err != nil {
		t.Fatal(err)
	}
	if err := w.zk.Start(leader); err != nil {
		t.Fatal(err)
	}
	if err := w.zk.WaitServing(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if _, err := w.zk.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	to = time.Now()
	return from, to
}

// killZooKeeperLeader kills ZooKeeper's leader while the mirrors follow,
// waits until they follow the next one, and starts the dead one again.
func killZooKeeperLeader(w *world) {
	t := w.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := w.zk.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := w.zk.Kill(leader); err != nil {
		t.Fatal(err)
	}
	next, err := w.zk.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "every mirror follows the new leader", func() bool {
		for _, m := range w.mirrors {
			s := status(m.status)
			if fmt.Sprint(s["leader"]) != fmt.Sprint(next) || s["synced"] != true {
				return false
			}
		}
		return true
	})
	t.Logf("ZooKeeper leader %d killed; the mirrors follow leader %d after %v", leader, next, time.Since(began).Round(time.Millisecond))
	if err := w.zk.Start(leader); err != nil {
		t.Fatal(err)
	}
	if err := w.zk.WaitServing(ctx, leader); err != nil {
		t.Fatal(err)
	}
}

// restartMirror kills mirror 5 and starts it again; it syncs anew.
func restartMirror(w *world) {
	t := w.t
	t.Helper()
	m := w.mirrors[1]
	m.proc.Kill()
	began := time.Now()
	w.startMirror(m, m.serve)
	w.waitReady(m, 2*time.Minute)
	t.Logf("mirror %d killed and ready again after %v: %s", m.id, time.Since(began).Round(time.Millisecond), w.mirrorSummary())
}
