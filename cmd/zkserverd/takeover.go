package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/mirror"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/zab"
)

// Taking over from ZooKeeper (issue 37, step 3): a mirror that follows a
// ZooKeeper ensemble becomes a member of a zkserverd ensemble of its own,
// seeded with the mirrored tree, sessions and last zxid. The mirror's side
// is a small state machine driven over its status endpoint
// (takeover_status.go) by `zkserverd takeover` (takeover_cmd.go):
//
//	mirroring --freeze--> frozen --switch--> switching --> serving
//	    ^                   |                    |
//	    +----unfreeze-------+                    +--> failed
//
// Frozen holds the mirror's own client writes (if it serves clients) and
// has synced with the ZooKeeper leader; it still applies what ZooKeeper
// commits for its direct clients until the voters stop. Switch is refused
// while any ZooKeeper voter accepts TCP on its quorum or election port:
// that, and the operator stopping the voters, is what keeps a zxid from
// being accepted on both sides. Switch is the point of no return: it stops
// following ZooKeeper, closes the mirror's client connections, seeds (or
// leaves empty, to join) the takeover configuration's data directory and
// runs a normal zkserverd member from that configuration in this process.

// The phases a mirror goes through; GET /mirror reports them.
const (
	phaseMirroring = "mirroring"
	phaseFrozen    = "frozen"
	phaseSwitching = "switching"
	phaseServing   = "serving"
	phaseFailed    = "failed"
)

// Errors the takeover's steps return; the status endpoint maps them to
// HTTP codes.
var (
	// errPhase: the step is not possible in the mirror's current phase.
	errPhase = errors.New("takeover: not possible in this phase")
	// errZooKeeperReachable: a ZooKeeper voter still accepts connections.
	errZooKeeperReachable = errors.New("takeover: a ZooKeeper voter still accepts connections on its quorum or election port; stop the voters first")
	// errNotSeedable: the mirror's last sync with ZooKeeper's leader did
	// not finish. Between a SNAP and UPTODATE its tree is a fuzzy
	// snapshot being caught up, not a state ZooKeeper ever had.
	errNotSeedable = errors.New("takeover: the mirror's last sync with ZooKeeper's leader did not finish; its state cannot seed the ensemble")
	// errNoTakeoverConfig: the mirror was started without --takeover-config.
	errNoTakeoverConfig = errors.New("takeover: this mirror has no --takeover-config")
)

// freezer holds the mirror's client writes for a takeover. Freeze returns
// once new writes wait (they are held, not failed), the writes in flight
// are finished, and a sync through the ZooKeeper leader has come back; it
// returns the last zxid applied then. Unfreeze lets the held writes go.
// The mirror's client front implements it when the mirror serves clients;
// without one, syncFreezer does.
type freezer interface {
	Freeze(ctx context.Context) (int64, error)
	Unfreeze()
}

// syncFreezer is the freezer of a mirror that serves no clients: there is
// nothing to hold, so freezing is a sync through the ZooKeeper leader,
// after which every transaction the leader had committed when it took the
// sync has been applied.
type syncFreezer struct {
	obs *zab.Observer
	st  *mirror.State
}

func (f syncFreezer) Freeze(ctx context.Context) (int64, error) {
	// Session 0 is nobody's: the leader's session check fails it
	// quietly, and the sync is answered all the same.
	if err := f.obs.Sync(ctx, 0, 0, "/", nil); err != nil {
		return 0, fmt.Errorf("takeover: sync with the ZooKeeper leader: %w", err)
	}
	return f.st.LastZxid(), nil
}

func (syncFreezer) Unfreeze() {}

// takeoverOptions wires a mirror's takeover.
type takeoverOptions struct {
	myid int64
	// configPath is --takeover-config ("": switching is refused).
	configPath string
	// view is the ZooKeeper ensemble's membership (its voters are dialed).
	view zab.View
	st   *mirror.State
	obs  *zab.Observer
	// freezer holds client writes; nil: syncFreezer.
	freezer freezer
	// stopClients, if set, closes the mirror's client connections at
	// the switch.
	stopClients func() error
	// clientPort, if set, is the mirror's client port: the member takes
	// it over if it serves on the same address (takeClientPort), and it is
	// closed when the switch fails.
	clientPort *handoffListener
	// dialTimeout bounds each reachability probe (default 1 s).
	dialTimeout time.Duration
	logger      *slog.Logger
}

// takeover is one mirror's side of the takeover. mu guards the fields
// below it; a step in progress (freeze, switch) is marked by busy, so
// that steps never overlap while the lock is not held during their I/O.
type takeover struct {
	opts takeoverOptions
	log  *slog.Logger

	mu       sync.Mutex
	phase    string
	busy     bool
	err      error          // why the takeover failed (phase failed)
	member   *server.Server // the zkserverd member, once started
	seeded   bool
	lastZxid int64 // the mirror's last zxid at the switch
}

func newTakeover(opts takeoverOptions) *takeover {
	if opts.freezer == nil {
		opts.freezer = syncFreezer{obs: opts.obs, st: opts.st}
	}
	if opts.dialTimeout <= 0 {
		opts.dialTimeout = time.Second
	}
	if opts.logger == nil {
		opts.logger = slog.New(slog.DiscardHandler)
	}
	return &takeover{opts: opts, log: opts.logger.With("component", "takeover"), phase: phaseMirroring}
}

// begin marks a step in progress if the phase is one of from.
func (t *takeover) begin(step string, from ...string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy {
		return fmt.Errorf("%w: a step is in progress (phase %s)", errPhase, t.phase)
	}
	for _, p := range from {
		if t.phase == p {
			t.busy = true
			return nil
		}
	}
	return fmt.Errorf("%w: cannot %s in phase %s", errPhase, step, t.phase)
}

// end ends the step in progress, entering phase (unless "").
func (t *takeover) end(phase string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busy = false
	if phase != "" {
		t.phase = phase
	}
}

// Phase returns the current phase.
func (t *takeover) Phase() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.phase
}

// switched reports whether the switch has begun: the mirror no longer
// follows ZooKeeper, whatever happens next.
func (t *takeover) switched() bool {
	switch t.Phase() {
	case phaseSwitching, phaseServing, phaseFailed:
		return true
	}
	return false
}

// Freeze holds client writes and syncs with the ZooKeeper leader; it
// returns the last zxid and the digest of the tree then. Freezing a
// frozen mirror syncs again.
func (t *takeover) Freeze(ctx context.Context) (int64, int64, error) {
	if err := t.begin("freeze", phaseMirroring, phaseFrozen); err != nil {
		return 0, 0, err
	}
	zxid, err := t.opts.freezer.Freeze(ctx)
	if err != nil {
		t.opts.freezer.Unfreeze()
		t.end(phaseMirroring)
		return 0, 0, err
	}
	t.end(phaseFrozen)
	digest := t.opts.st.Digest()
	t.log.Info("frozen: client writes held, synced with the ZooKeeper leader", "last_zxid", zxidHex(zxid))
	return zxid, digest, nil
}

// Unfreeze lets held writes go and goes back to mirroring.
func (t *takeover) Unfreeze() error {
	if err := t.begin("unfreeze", phaseFrozen, phaseMirroring); err != nil {
		return err
	}
	t.opts.freezer.Unfreeze()
	t.end(phaseMirroring)
	t.log.Info("unfrozen: mirroring")
	return nil
}

// ZooKeeperReachable reports whether some ZooKeeper voter accepts TCP on
// its quorum port (only the leader listens there) or its election port
// (every running voter does).
func (t *takeover) ZooKeeperReachable(ctx context.Context) bool {
	return anyAccepts(ctx, t.voterAddrs(), t.opts.dialTimeout)
}

// voterAddrs returns the quorum and election addresses of the voters of
// the ensemble's configuration file and of its current configuration in
// /zookeeper/config (a reconfig may have added voters since the mirror
// started).
func (t *takeover) voterAddrs() []string {
	views := []zab.View{t.opts.view}
	if data, _, _ := t.opts.st.Tree().GetData("/zookeeper/config", nil, nil); len(data) > 0 {
		if v, err := zab.ParseView(string(data)); err == nil {
			views = append(views, v)
		}
	}
	var addrs []string
	for _, v := range views {
		for _, s := range v.Voters() {
			for _, a := range []string{s.Addr, s.ElectionAddr} {
				if !slices.Contains(addrs, a) {
					addrs = append(addrs, a)
				}
			}
		}
	}
	return addrs
}

// anyAccepts dials every address at once and reports whether any accepts
// a TCP connection within timeout.
func anyAccepts(ctx context.Context, addrs []string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	accepted := make(chan bool, len(addrs))
	for _, a := range addrs {
		go func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", a)
			if err == nil {
				c.Close()
			}
			accepted <- err == nil
		}()
	}
	found := false
	for range addrs {
		if <-accepted {
			found = true
			cancel()
		}
	}
	return found
}

// Switch makes the mirror a zkserverd member: it requires the frozen
// phase and no reachable ZooKeeper voter, stops following ZooKeeper,
// closes the client connections, seeds the takeover data directory with
// the mirrored state (seed) or leaves it empty to join, and starts the
// member. It returns once the member has started (it may not serve yet:
// an empty member waits for the seeded one). A failure after the mirror
// stopped following leaves it in phase failed.
func (t *takeover) Switch(ctx context.Context, seed bool) error {
	if t.opts.configPath == "" {
		return errNoTakeoverConfig
	}
	if err := t.begin("switch", phaseFrozen); err != nil {
		return err
	}
	if t.ZooKeeperReachable(ctx) {
		t.end("")
		return errZooKeeperReachable
	}
	if seed && !t.opts.st.Synced() {
		t.end("")
		return errNotSeedable
	}
	t.end(phaseSwitching) // the point of no return
	if err := t.doSwitch(ctx, seed); err != nil {
		if t.opts.clientPort != nil {
			t.opts.clientPort.Close() // no member serves on it: clients go elsewhere
		}
		t.fail(err)
		return err
	}
	return nil
}

// doSwitch runs the switch's steps.
func (t *takeover) doSwitch(ctx context.Context, seed bool) error {
	start := time.Now()
	t.opts.obs.Close() // waits until no transaction is applied any more
	if t.opts.stopClients != nil {
		if err := t.opts.stopClients(); err != nil {
			t.log.Warn("closing the mirror's client connections", "err", err)
		}
	}
	t.opts.freezer.Unfreeze() // held writes fail now: their connections are closed
	if err := t.opts.st.Err(); err != nil {
		return fmt.Errorf("takeover: the mirrored state is broken, it cannot be taken over: %w", err)
	}
	last := t.opts.st.LastZxid()
	t.mu.Lock()
	t.lastZxid, t.seeded = last, seed
	t.mu.Unlock()
	t.log.Info("switching: stopped following ZooKeeper", "last_zxid", zxidHex(last), "seed", seed)
	var in *replication.SeedInput
	if seed {
		v := seedInput(t.opts.st)
		in = &v
	}
	// The member outlives the request that started it.
	member, err := startTakeoverMember(context.WithoutCancel(ctx), t.opts.configPath, t.opts.myid, in, t.opts.clientPort, t.opts.logger)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.member = member
	t.mu.Unlock()
	t.log.Info("zkserverd member started", "seeded", seed, "took", time.Since(start).Round(time.Millisecond))
	go t.awaitServing(member)
	return nil
}

// awaitServing enters phase serving once the member serves clients.
func (t *takeover) awaitServing(member *server.Server) {
	if err := member.WaitServing(context.Background()); err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.phase == phaseSwitching {
		t.phase = phaseServing
		t.log.Info("serving as a zkserverd member", "mode", member.Mode())
	}
}

// fail enters phase failed with err.
func (t *takeover) fail(err error) {
	t.mu.Lock()
	t.phase, t.err = phaseFailed, err
	t.mu.Unlock()
	t.log.Error("takeover failed: this process no longer follows ZooKeeper and does not serve", "err", err)
}

// serveUntil runs after the switch began: it waits for ctx, then stops
// the member (a leader hands its leadership over first, as on SIGTERM).
func (t *takeover) serveUntil(ctx context.Context) error {
	<-ctx.Done()
	t.mu.Lock()
	member := t.member
	t.mu.Unlock()
	if member == nil {
		return nil
	}
	t.log.Info("stopping the zkserverd member")
	if err := member.HandOffAndClose(defaultHandOffTimeout); err != nil {
		return fmt.Errorf("takeover: stop the member: %w", err)
	}
	return nil
}

// zxidHex formats a zxid as GET /mirror does.
func zxidHex(z int64) string { return fmt.Sprintf("%#x", z) }

// parseZxid reads a zxid zxidHex wrote.
func parseZxid(s string) (int64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("takeover: zxid %q: %w", s, err)
	}
	return int64(v), nil
}
