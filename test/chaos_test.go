package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/replication"
)

// The chaos test runs an ensemble whose members reach each other through
// per-link proxies (proxiedEnsemble), injects faults while concurrent
// clients run register, counter, lock and ephemeral-membership workloads,
// heals, and then checks what the clients saw:
//
//   - the register and counter histories are linearizable (porcupine);
//   - every acknowledged write is readable after the heal (the final reads
//     are part of the histories; the counter's value is at least its
//     acknowledged increments);
//   - no two clients held the lock at once;
//   - no session expired (faults are far shorter than the session
//     timeout), every client kept its session id, and every client still
//     has its ephemeral membership node;
//   - writes were acknowledged during every fault (a quorum remained).
//
// Faults affect at most a minority of the members at a time. A killed
// member is stopped and later restarted on its data directory; a paused
// member has every link to and from it frozen (connections stay open and
// carry nothing, as with SIGSTOP) while its client port stays reachable,
// so its clients see it close their connections once it has lost its
// leader, as a member without a quorum does.
//
// By default each ensemble size runs one fixed schedule with seed 1 (the
// quick form in go test ./...). CHAOS_SEEDS (a count, or a comma-separated
// list of seeds) and CHAOS_DURATION (per seed and size, default 60s)
// switch to random schedules for long runs: make chaos.
func TestChaos(t *testing.T) {
	seeds, duration, err := chaosSettings(os.Getenv("CHAOS_SEEDS"), os.Getenv("CHAOS_DURATION"))
	if err != nil {
		t.Fatal(err)
	}
	for _, members := range []int{3, 5} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("members=%d/seed=%d", members, seed), func(t *testing.T) {
				runChaos(t, members, seed, duration)
			})
		}
	}
}

// chaosSettings parses CHAOS_SEEDS and CHAOS_DURATION; a zero duration
// means the quick fixed schedule.
func chaosSettings(seedsEnv, durationEnv string) ([]uint64, time.Duration, error) {
	if seedsEnv == "" {
		return []uint64{1}, 0, nil
	}
	var seeds []uint64
	if n, err := strconv.Atoi(seedsEnv); err == nil && !strings.Contains(seedsEnv, ",") {
		for i := 1; i <= n; i++ {
			seeds = append(seeds, uint64(i))
		}
	} else {
		for _, f := range strings.Split(seedsEnv, ",") {
			s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return nil, 0, fmt.Errorf("CHAOS_SEEDS=%q: %w", seedsEnv, err)
			}
			seeds = append(seeds, s)
		}
	}
	duration := 60 * time.Second
	if durationEnv != "" {
		d, err := time.ParseDuration(durationEnv)
		if err != nil || d <= 0 {
			return nil, 0, fmt.Errorf("CHAOS_DURATION=%q: want a positive duration", durationEnv)
		}
		duration = d
	}
	if len(seeds) == 0 {
		return nil, 0, fmt.Errorf("CHAOS_SEEDS=%q names no seed", seedsEnv)
	}
	return seeds, duration, nil
}

// chaosRun is one run: the ensemble, its links, the clients and what they
// recorded. The test goroutine injects faults; mu guards the fields below
// it, which the workload goroutines add to.
type chaosRun struct {
	t       *testing.T
	e       *ensemble
	links   [][]*linkProxy
	rng     *rand.Rand   // the test goroutine's only
	broken  map[int]bool // members that failed to restart; the test goroutine's only
	start   time.Time
	reg     *history
	ctr     *history
	clients []*chaosClient

	mu       sync.Mutex
	windows  []faultWindow
	acked    map[string]int // acknowledged writes (lock: acquisitions) per workload
	unknown  map[string]int // writes of unknown outcome per workload
	ackTimes []int64        // when each write was acknowledged
	holds    []lockHold     // lock holds
	problems map[string][]string
}

// faultWindow is one fault's span on the run's clock.
type faultWindow struct {
	name       string
	start, end int64
	settle     time.Duration // from the fault's settle
}

func (r *chaosRun) now() int64 { return int64(time.Since(r.start)) }

// count records a write acknowledged (ok) or of unknown outcome at t.
func (r *chaosRun) count(workload string, ok bool, t int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok {
		r.unknown[workload]++
		return
	}
	r.acked[workload]++
	r.ackTimes = append(r.ackTimes, t)
}

func (r *chaosRun) recordHold(h lockHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds = append(r.holds, h)
}

// problem records a failed assertion under its name.
func (r *chaosRun) problem(assertion, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems[assertion] = append(r.problems[assertion], msg)
}

// servers is the client connect string: every member's client port.
func (r *chaosRun) servers() []string {
	return r.e.Addrs()
}

func runChaos(t *testing.T, members int, seed uint64, duration time.Duration) {
	e, links := proxiedEnsemble(t, members, func(c *conf.Config) { c.MaxSessionTimeout = 20_000 })
	start := time.Now()
	r := &chaosRun{t: t, e: e, links: links, rng: rand.New(rand.NewPCG(seed, 0x5eed)), start: start,
		reg: newHistory(), ctr: newHistory(),
		broken: map[int]bool{}, acked: map[string]int{}, unknown: map[string]int{}, problems: map[string][]string{}}
	admin := r.setup()
	stop := r.startWorkloads(seed)
	if duration == 0 {
		r.runSchedule(quickSchedule(members))
	} else {
		r.runRandom(duration)
	}
	r.healAll()
	time.Sleep(time.Second) // writes after the heal, on every member
	stop()
	r.check(admin)
}

// setup creates the workloads' znodes and the clients, each with its
// membership node.
func (r *chaosRun) setup() *chaosClient {
	r.t.Helper()
	admin, err := newChaosClient(chaosClients, r.servers(), r.start)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(admin.conn.Close)
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{regPath, ctrPath, lockPath, membersPath} {
		if _, err := admin.conn.Create(p, []byte("0"), 0, acl); err != nil {
			r.t.Fatalf("create %s: %v", p, err)
		}
	}
	for id := range chaosClients {
		c, err := newChaosClient(id, r.servers(), r.start)
		if err != nil {
			r.t.Fatal(err)
		}
		r.t.Cleanup(c.conn.Close)
		if _, err := c.conn.Create(fmt.Sprintf("%s/c%d", membersPath, id), nil, zk.FlagEphemeral, acl); err != nil {
			r.t.Fatalf("client %d membership: %v", id, err)
		}
		r.clients = append(r.clients, c)
	}
	return admin
}

// startWorkloads runs two clients on each workload; the returned function
// stops them and waits (bounded) for them to finish.
func (r *chaosRun) startWorkloads(seed uint64) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	work := []func(context.Context, *chaosClient, *rand.Rand){r.registerWorkload, r.counterWorkload, r.lockWorkload}
	for i, c := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work[i%len(work)](ctx, c, rand.New(rand.NewPCG(seed, uint64(i))))
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			r.problem("workloads", "a workload did not stop within 30s (a request hung)")
		}
	}
	r.t.Cleanup(stop)
	return stop
}

// A fault is applied to the run and returns the function that heals it.
// settle is how long the ensemble may take to serve writes again once the
// fault begins: a new election, and clients moving to other members.
type fault struct {
	name   string
	settle time.Duration
	apply  func(r *chaosRun) (heal func())
}

// moveTime bounds an election (raft timeouts of 250 ms) plus clients
// moving, including go-zookeeper's one-second pause after it has tried
// every server in vain.
const moveTime = 2 * time.Second

// The faults. Each affects at most a minority: (members-1)/2 members.
var (
	faultIsolateLeader = fault{"leader isolated", moveTime, func(r *chaosRun) func() {
		return r.cutOff([]int{r.e.Leader()}, linkCut)
	}}
	faultIsolateMember = fault{"follower isolated", moveTime, func(r *chaosRun) func() {
		return r.cutOff(r.pick(1, false), linkCut)
	}}
	faultSplit = fault{"majority/minority split", moveTime, func(r *chaosRun) func() {
		return r.cutOff(r.pick(r.e.Size()/2, r.rng.IntN(2) == 0), linkCut)
	}}
	faultPause = fault{"members paused", moveTime, func(r *chaosRun) func() {
		return r.cutOff(r.pick(r.e.Size()/2, r.rng.IntN(2) == 0), linkFrozen)
	}}
	faultKill = fault{"members killed", moveTime, func(r *chaosRun) func() {
		return r.kill(r.pick(r.e.Size()/2, r.rng.IntN(2) == 0))
	}}
	faultFlap = fault{"flapping link", moveTime, func(r *chaosRun) func() {
		return r.flap(r.e.Leader(), r.pick(1, false)[0])
	}}
)

// quickSchedule is the fixed schedule of the quick form: the partitions
// with three members, a minority killed, paused or split off with five.
func quickSchedule(members int) []fault {
	if members <= 3 {
		return []fault{faultIsolateLeader, faultIsolateMember, faultFlap, faultPause}
	}
	return []fault{faultSplit, faultKill, faultPause}
}

// Quick fault timing: each fault lasts a second past its settle time
// (writes must be acknowledged in that second), then heals for healFor.
const healFor = time.Second

func (r *chaosRun) runSchedule(faults []fault) {
	for _, f := range faults {
		r.inject(f, f.settle+time.Second)
		time.Sleep(healFor)
	}
}

// runRandom injects random faults of random length until d has passed.
func (r *chaosRun) runRandom(d time.Duration) {
	all := []fault{faultIsolateLeader, faultIsolateMember, faultSplit, faultPause, faultKill, faultFlap}
	end := time.Now().Add(d)
	for i := 0; i < 10_000 && time.Now().Before(end); i++ {
		f := all[r.rng.IntN(len(all))]
		r.inject(f, time.Duration(1000+r.rng.IntN(int(f.settle/time.Millisecond)+3000))*time.Millisecond)
		time.Sleep(time.Duration(500+r.rng.IntN(2500)) * time.Millisecond)
	}
}

// inject applies f for d and heals it, recording its window.
func (r *chaosRun) inject(f fault, d time.Duration) {
	w := faultWindow{name: f.name, start: r.now(), settle: f.settle}
	heal := f.apply(r)
	time.Sleep(d)
	w.end = r.now()
	heal()
	r.mu.Lock()
	r.windows = append(r.windows, w)
	r.mu.Unlock()
	r.t.Logf("chaos: %s from %v to %v", f.name, time.Duration(w.start).Round(time.Millisecond), time.Duration(w.end).Round(time.Millisecond))
	r.awaitRecovery(f.name)
}

// awaitRecovery waits (up to 20s) until every running member serves
// again, so that the next fault starts from a whole ensemble.
func (r *chaosRun) awaitRecovery(after string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range r.e.Size() {
		if !r.e.Running(i) {
			continue
		}
		if err := r.e.Member(i).WaitServing(ctx); err != nil {
			r.problem("recovery", fmt.Sprintf("member %d not serving 20s after %q healed: %v", i+1, after, err))
		}
	}
}

// pick returns n distinct running members, the current leader first if
// withLeader, followers otherwise.
func (r *chaosRun) pick(n int, withLeader bool) []int {
	lead := r.e.Leader()
	var out []int
	if withLeader {
		out = append(out, lead)
	}
	for _, i := range r.rng.Perm(r.e.Size()) {
		if len(out) < n && i != lead && r.e.Running(i) {
			out = append(out, i)
		}
	}
	return out
}

// cutOff puts every link between the group and the other members in
// state; within the group links stay open.
func (r *chaosRun) cutOff(group []int, state linkState) func() {
	in := func(m int) bool { return slices.Contains(group, m) }
	sel := func(from, to int) bool { return in(from) != in(to) }
	r.t.Logf("chaos: members %v cut off (%v)", plusOne(group), state)
	setLinks(r.links, sel, state)
	return func() { setLinks(r.links, sel, linkOpen) }
}

// kill stops members; healing restarts them on their data directories.
func (r *chaosRun) kill(group []int) func() {
	r.t.Logf("chaos: members %v killed", plusOne(group))
	for _, m := range group {
		r.e.Stop(m)
	}
	return func() {
		for _, m := range group {
			r.restart(m)
		}
	}
}

// restart starts a stopped member again. A panic while it opens its data
// (a damaged log) is reported, and the member stays down for the rest of
// the run (its half-opened stores keep their file locks), so that the run
// still checks everything else.
func (r *chaosRun) restart(m int) {
	if r.broken[m] {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.broken[m] = true
			r.problem("restart", fmt.Sprintf("member %d did not restart on its data directory: panic: %v", m+1, p))
		}
	}()
	r.e.Start(m)
}

// flap cuts and heals the links between members a and b every 100-400ms
// until healed.
func (r *chaosRun) flap(a, b int) func() {
	r.t.Logf("chaos: link %d<->%d flapping", a+1, b+1)
	sel := func(from, to int) bool { return (from == a && to == b) || (from == b && to == a) }
	rng := rand.New(rand.NewPCG(r.rng.Uint64(), 0))
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		state := linkCut
		for i := 0; i < 1000; i++ {
			setLinks(r.links, sel, state)
			state = linkCut + linkOpen - state
			select {
			case <-done:
				return
			case <-time.After(time.Duration(100+rng.IntN(300)) * time.Millisecond):
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		setLinks(r.links, sel, linkOpen)
	}
}

// healAll opens every link and starts every stopped member.
func (r *chaosRun) healAll() {
	setLinks(r.links, func(int, int) bool { return true }, linkOpen)
	for i := range r.e.Size() {
		if !r.e.Running(i) {
			r.restart(i)
		}
	}
}

func plusOne(ms []int) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m + 1
	}
	return out
}

func (s linkState) String() string {
	return [...]string{"open", "cut", "frozen"}[s]
}

// check runs every assertion after the heal and reports each failed one
// under its name.
func (r *chaosRun) check(admin *chaosClient) {
	for i := range r.e.Size() {
		if r.e.Running(i) {
			r.e.WaitServing(i)
		}
	}
	r.finalReads(admin)
	r.checkDigests()
	r.checkSessions(admin)
	r.checkProgress()
	r.mu.Lock()
	r.problems["lock exclusion"] = append(r.problems["lock exclusion"], checkHolds(r.holds, r.expiryTimes())...)
	r.mu.Unlock()
	notes := r.annotations()
	if why := checkLinearizable(r.t.Name()+"-register", registerModel, r.reg.closed(), notes); why != "" {
		r.problem("linearizability", why)
	}
	if why := checkLinearizable(r.t.Name()+"-counter", counterModel, r.ctr.closed(), notes); why != "" {
		r.problem("linearizability", why)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t.Logf("chaos: acknowledged %v, unknown outcome %v, %d register and %d counter operations recorded",
		r.acked, r.unknown, len(r.reg.ops), len(r.ctr.ops))
	names := make([]string, 0, len(r.problems))
	for name := range r.problems {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, msg := range r.problems[name] {
			r.t.Errorf("[%s] %s", name, msg)
		}
	}
}

// finalReads reads the register and the counter after the heal, as the
// last operations of their histories, and checks the counter holds every
// acknowledged increment.
func (r *chaosRun) finalReads(admin *chaosClient) {
	var reg, ctr int
	var ctrStat *zk.Stat
	var regCall, regRet, ctrCall, ctrRet int64
	testutil.Eventually(r.t, 20*time.Second, "final reads", func() bool {
		var err1, err2 error
		regCall = r.now()
		reg, _, err1 = syncGet(admin.conn, regPath)
		regRet, ctrCall = r.now(), r.now()
		ctr, ctrStat, err2 = syncGet(admin.conn, ctrPath)
		ctrRet = r.now()
		return err1 == nil && err2 == nil
	})
	r.reg.add(admin.id, regInput{}, regOutput{value: reg}, regCall, regRet)
	r.ctr.add(admin.id, ctrInput{}, ctrOutput{read: counterState{ctr, int(ctrStat.Version)}}, ctrCall, ctrRet)
	r.mu.Lock()
	ok, unknown := r.acked["counter"], r.unknown["counter"]
	r.mu.Unlock()
	if ctr < ok || ctr > ok+unknown {
		r.problem("acknowledged writes", fmt.Sprintf("counter is %d after %d acknowledged and %d unknown increments", ctr, ok, unknown))
	}
}

// checkDigests: the members' digest records (replication/digest.go, the
// server's Replica().Digests()) agree. Records of one checkpoint (equal
// Index) carry the same Zxid and Digest on every member that has one; at
// least one checkpoint was recorded by every running member (waited for,
// up to 15 s: the leader appends one every digest interval in which the
// tree changed); and no member is fenced or counted a digest mismatch.
func (r *chaosRun) checkDigests() {
	var members []int
	for i := range r.e.Size() {
		if r.e.Running(i) {
			members = append(members, i)
		}
	}
	var records [][]replication.DigestRecord
	var common []uint64
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		records = records[:0]
		for _, i := range members {
			records = append(records, r.e.Member(i).Replica().Digests())
		}
		common = commonDigestIndexes(records)
		if len(common) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(common) == 0 {
		var counts []string
		for k, i := range members {
			counts = append(counts, fmt.Sprintf("member %d: %d", i+1, len(records[k])))
		}
		r.problem("digests", fmt.Sprintf("no checkpoint recorded by every running member within 15s (records: %s)", strings.Join(counts, ", ")))
	}
	for _, msg := range digestDisagreements(plusOne(members), records) {
		r.problem("digests", msg)
	}
	for _, i := range members {
		rep := r.e.Member(i).Replica()
		if err := rep.Fenced(); err != nil {
			r.problem("digests", fmt.Sprintf("member %d is fenced: %v", i+1, err))
		}
		if n := rep.DigestMismatches(); n != 0 {
			r.problem("digests", fmt.Sprintf("member %d counted %d digest mismatches", i+1, n))
		}
	}
	if len(common) > 0 {
		r.t.Logf("chaos: digest records agree; %d checkpoints recorded by all %d running members, the last at index %d",
			len(common), len(members), common[len(common)-1])
	}
}

// commonDigestIndexes returns, in order, the indexes of the checkpoints
// that every one of records (one member's each) holds.
func commonDigestIndexes(records [][]replication.DigestRecord) []uint64 {
	if len(records) == 0 {
		return nil
	}
	count := map[uint64]int{}
	for _, recs := range records {
		seen := map[uint64]bool{}
		for _, rec := range recs {
			if !seen[rec.Index] {
				seen[rec.Index] = true
				count[rec.Index]++
			}
		}
	}
	var out []uint64
	for index, n := range count {
		if n == len(records) {
			out = append(out, index)
		}
	}
	slices.Sort(out)
	return out
}

// digestDisagreements compares the records of members (ids[k] holds
// records[k]): every record must equal each other member's record of the
// same Index (Zxid and Digest), and a member holds one record per Index.
func digestDisagreements(ids []int, records [][]replication.DigestRecord) []string {
	type first struct {
		id  int
		rec replication.DigestRecord
	}
	byIndex := map[uint64]first{}
	var out []string
	for k, recs := range records {
		own := map[uint64]bool{}
		for _, rec := range recs {
			if own[rec.Index] {
				out = append(out, fmt.Sprintf("member %d holds two records of checkpoint %d", ids[k], rec.Index))
			}
			own[rec.Index] = true
			f, ok := byIndex[rec.Index]
			switch {
			case !ok:
				byIndex[rec.Index] = first{ids[k], rec}
			case f.rec != rec:
				out = append(out, fmt.Sprintf("checkpoint at index %d: member %d recorded zxid %#x digest %016x, member %d zxid %#x digest %016x",
					rec.Index, f.id, f.rec.Zxid, f.rec.Digest, ids[k], rec.Zxid, rec.Digest))
			}
		}
	}
	return out
}

// TestDigestComparison: the chaos test's digest check finds the common
// checkpoints and every disagreement.
func TestDigestComparison(t *testing.T) {
	rec := func(index uint64, zxid int64, digest uint64) replication.DigestRecord {
		return replication.DigestRecord{Index: index, Zxid: zxid, Digest: digest}
	}
	a := []replication.DigestRecord{rec(10, 5, 0xaa), rec(20, 9, 0xbb), rec(30, 12, 0xcc)}
	b := []replication.DigestRecord{rec(20, 9, 0xbb), rec(30, 12, 0xcc)}
	c := []replication.DigestRecord{rec(30, 12, 0xcc), rec(40, 15, 0xdd)}
	if got := commonDigestIndexes([][]replication.DigestRecord{a, b, c}); !slices.Equal(got, []uint64{30}) {
		t.Errorf("common indexes %v, want [30]", got)
	}
	if got := commonDigestIndexes([][]replication.DigestRecord{a, {rec(40, 15, 0xdd)}}); len(got) != 0 {
		t.Errorf("common indexes %v, want none", got)
	}
	if got := digestDisagreements([]int{1, 2, 3}, [][]replication.DigestRecord{a, b, c}); len(got) != 0 {
		t.Errorf("agreeing records reported: %v", got)
	}
	badDigest := []replication.DigestRecord{rec(20, 9, 0xbe)}
	badZxid := []replication.DigestRecord{rec(30, 13, 0xcc)}
	twice := []replication.DigestRecord{rec(10, 5, 0xaa), rec(10, 5, 0xaa)}
	got := digestDisagreements([]int{1, 2, 3, 4}, [][]replication.DigestRecord{a, badDigest, badZxid, twice})
	if len(got) != 3 {
		t.Errorf("%d disagreements reported, want 3: %v", len(got), got)
	}
}

// checkSessions: no client's session expired or changed, and every client
// whose session never expired still has its ephemeral membership node.
func (r *chaosRun) checkSessions(admin *chaosClient) {
	for _, c := range append(slices.Clone(r.clients), admin) {
		expiries, longest, reconnects := c.sessionReport()
		for _, x := range expiries {
			r.problem("session kept", fmt.Sprintf("client %d (timeout %v): %s", c.id, chaosSessionTimeout, x))
		}
		if got := c.conn.SessionID(); got != c.session {
			r.problem("session kept", fmt.Sprintf("client %d: session %#x became %#x", c.id, c.session, got))
		}
		r.t.Logf("chaos: client %d reconnected %d times, longest disconnection %v", c.id, reconnects, longest.Round(time.Millisecond))
	}
	for _, c := range r.clients {
		if len(c.expiryTimes()) > 0 {
			continue // its ephemeral went with the session: reported above
		}
		path := fmt.Sprintf("%s/c%d", membersPath, c.id)
		ok, st, err := admin.conn.Exists(path)
		switch {
		case err != nil:
			r.problem("membership", fmt.Sprintf("exists %s: %v", path, err))
		case !ok:
			r.problem("membership", fmt.Sprintf("client %d (session %#x) lost its ephemeral %s", c.id, c.session, path))
		case st.EphemeralOwner != c.session:
			r.problem("membership", fmt.Sprintf("%s is owned by %#x, not client %d's session %#x", path, st.EphemeralOwner, c.id, c.session))
		}
	}
}

// expiryTimes are when each client saw its session expire.
func (r *chaosRun) expiryTimes() map[int][]int64 {
	out := map[int][]int64{}
	for _, c := range r.clients {
		out[c.id] = c.expiryTimes()
	}
	return out
}

// minAckWindow is the shortest stretch of a fault, past its settle time,
// in which a write must be acknowledged: a random fault may end a few
// milliseconds after its settle time, too soon for any client's round trip.
const minAckWindow = 500 * time.Millisecond

// checkProgress: every workload made progress, and writes were
// acknowledged during every fault once it had had time to settle.
func (r *chaosRun) checkProgress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range []string{"register", "counter", "lock"} {
		if r.acked[w] == 0 {
			r.problems["progress"] = append(r.problems["progress"], fmt.Sprintf("the %s workload completed no operation", w))
		}
	}
	for _, w := range r.windows {
		from := w.start + int64(w.settle)
		if w.end-from < int64(minAckWindow) {
			continue // too short to expect writes
		}
		n := 0
		for _, at := range r.ackTimes {
			if at >= from && at <= w.end {
				n++
			}
		}
		if n == 0 {
			r.problems["writes during faults"] = append(r.problems["writes during faults"],
				fmt.Sprintf("no write acknowledged during %q from %v (its start + %v to settle) to %v",
					w.name, time.Duration(from).Round(time.Millisecond), w.settle, time.Duration(w.end).Round(time.Millisecond)))
		}
	}
}

// annotations mark the faults in a linearizability visualization.
func (r *chaosRun) annotations() []porcupine.Annotation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []porcupine.Annotation
	for _, w := range r.windows {
		out = append(out, porcupine.Annotation{Tag: "faults", Start: w.start, End: w.end, Description: w.name})
	}
	return out
}

// TestChaosSettings: the quick form without CHAOS_SEEDS; a count or a list
// of seeds with a duration otherwise; bad values refused.
func TestChaosSettings(t *testing.T) {
	cases := []struct {
		seeds, duration string
		want            []uint64
		d               time.Duration
		bad             bool
	}{
		{"", "", []uint64{1}, 0, false},
		{"3", "", []uint64{1, 2, 3}, 60 * time.Second, false},
		{"7,42", "5m", []uint64{7, 42}, 5 * time.Minute, false},
		{"0", "", nil, 0, true},
		{"x", "", nil, 0, true},
		{"2", "-1s", nil, 0, true},
	}
	for _, c := range cases {
		got, d, err := chaosSettings(c.seeds, c.duration)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) || d != c.d {
			t.Errorf("chaosSettings(%q, %q) = %v, %v, %v", c.seeds, c.duration, got, d, err)
		}
	}
}

// TestCheckHolds: overlapping holds are reported unless one may have
// outlived its expired session.
func TestCheckHolds(t *testing.T) {
	s := int64(time.Second)
	cases := []struct {
		name    string
		holds   []lockHold
		expired map[int][]int64
		bad     int
	}{
		{"disjoint", []lockHold{{0, 0, s}, {1, 2 * s, 3 * s}, {0, 3 * s, 4 * s}}, nil, 0},
		{"overlap", []lockHold{{0, 0, 2 * s}, {1, s, 3 * s}}, nil, 1},
		{"inside a long hold", []lockHold{{0, 0, 10 * s}, {1, 2 * s, 3 * s}, {2, 4 * s, 5 * s}}, nil, 2},
		{"holder expired", []lockHold{{0, 0, 2 * s}, {1, s, 3 * s}}, map[int][]int64{0: {5 * s}}, 0},
		{"expired long after", []lockHold{{0, 0, 2 * s}, {1, s, 3 * s}}, map[int][]int64{0: {60 * s}}, 1},
	}
	for _, c := range cases {
		if got := checkHolds(c.holds, c.expired); len(got) != c.bad {
			t.Errorf("%s: %d overlaps reported (%v), want %d", c.name, len(got), got, c.bad)
		}
	}
}
