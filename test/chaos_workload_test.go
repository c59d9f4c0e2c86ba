package test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkserverd/zkserverd/internal/testutil"
)

// The chaos workloads: each client runs one of them in its own goroutine
// with its own session, connected with the whole server list so that it
// fails over, and records what it did in the run's histories.

const (
	regPath     = "/chaos-register"
	ctrPath     = "/chaos-counter"
	lockPath    = "/chaos-lock"
	membersPath = "/chaos-members"
	// chaosSessionTimeout is every client's session timeout: far longer
	// than any fault, so that no session may expire in a run.
	chaosSessionTimeout = 12 * time.Second
	// chaosClients is the number of workload clients, two per workload;
	// the checking client's id is chaosClients.
	chaosClients = 6
	// maxOpsPerClient bounds each workload loop besides its context.
	maxOpsPerClient = 100_000
)

// chaosClient is one client session and what its session went through.
// mu guards the fields below it; the event goroutine writes them.
type chaosClient struct {
	id      int
	conn    *zk.Conn
	session int64 // the session id it started with

	start time.Time // the run's clock starts here

	mu         sync.Mutex
	discSince  time.Time     // start of the current disconnection, zero while it has a session
	longest    time.Duration // longest disconnection so far
	expiries   []string      // one line per StateExpired seen
	expiredAt  []int64       // when each StateExpired came, on the run's clock
	reconnects int
}

// newChaosClient connects to servers and waits for a session (bounded);
// start is the run's clock.
func newChaosClient(id int, servers []string, start time.Time) (*chaosClient, error) {
	conn, events, err := zk.Connect(servers, chaosSessionTimeout, zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		return nil, fmt.Errorf("client %d: connect: %w", id, err)
	}
	c := &chaosClient{id: id, conn: conn, start: start, discSince: time.Now()}
	go c.track(events)
	deadline := time.Now().Add(20 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			conn.Close()
			return nil, fmt.Errorf("client %d: no session within 20s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.session = conn.SessionID()
	return c, nil
}

// track follows the session's events until the connection is closed.
func (c *chaosClient) track(events <-chan zk.Event) {
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		c.mu.Lock()
		now := time.Now()
		switch ev.State {
		case zk.StateDisconnected, zk.StateConnecting:
			if c.discSince.IsZero() {
				c.discSince = now
			}
		case zk.StateHasSession:
			if !c.discSince.IsZero() {
				c.longest = max(c.longest, now.Sub(c.discSince))
				c.discSince = time.Time{}
				c.reconnects++
			}
		case zk.StateExpired:
			d := time.Duration(0)
			if !c.discSince.IsZero() {
				d = now.Sub(c.discSince)
			}
			at := now.Sub(c.start)
			c.expiredAt = append(c.expiredAt, int64(at))
			c.expiries = append(c.expiries, fmt.Sprintf("expired at %v after a disconnection of %v (longest before: %v)",
				at.Round(time.Millisecond), d.Round(time.Millisecond), c.longest.Round(time.Millisecond)))
		}
		c.mu.Unlock()
	}
}

// expiryTimes returns when the client saw its session expire.
func (c *chaosClient) expiryTimes() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.expiredAt...)
}

// sessionReport returns the expiries seen, the longest disconnection
// (including one still going on) and the number of reconnections.
func (c *chaosClient) sessionReport() ([]string, time.Duration, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	longest := c.longest
	if !c.discSince.IsZero() {
		longest = max(longest, time.Since(c.discSince))
	}
	return append([]string(nil), c.expiries...), longest, c.reconnects
}

// definite reports whether err is the server's answer (the operation was
// decided and not applied) rather than a lost connection (unknown outcome).
func definite(err error) bool {
	for _, e := range []error{zk.ErrBadVersion, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNotEmpty} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// pace sleeps a few milliseconds, less if ctx ends.
func pace(ctx context.Context, rng *rand.Rand) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(5+rng.IntN(15)) * time.Millisecond):
	}
}

// syncGet reads path after a sync, so that the read sees every write
// acknowledged before it started.
func syncGet(c *zk.Conn, path string) (int, *zk.Stat, error) {
	if _, err := c.Sync(path); err != nil {
		return 0, nil, fmt.Errorf("sync: %w", err)
	}
	data, st, err := c.Get(path)
	if err != nil {
		return 0, nil, fmt.Errorf("get: %w", err)
	}
	v, err := strconv.Atoi(string(data))
	if err != nil {
		return 0, nil, fmt.Errorf("%s holds %q: %w", path, data, err)
	}
	return v, st, nil
}

// registerWorkload sets the register to values unique to this client or
// reads it, at random.
func (r *chaosRun) registerWorkload(ctx context.Context, c *chaosClient, rng *rand.Rand) {
	h := r.reg
	for i := 1; i <= maxOpsPerClient && ctx.Err() == nil; i++ {
		call := r.now()
		if rng.IntN(2) == 0 {
			v := c.id*1_000_000 + i
			_, err := c.conn.Set(regPath, []byte(strconv.Itoa(v)), -1)
			ret := r.now()
			switch {
			case err == nil:
				h.add(c.id, regInput{write: true, value: v}, regOutput{}, call, ret)
				r.count("register", true, ret)
			case definite(err):
				r.problem("register", fmt.Sprintf("client %d: set: %v", c.id, err))
			default:
				h.add(c.id, regInput{write: true, value: v}, regOutput{}, call, -1)
				r.count("register", false, ret)
			}
		} else if v, _, err := syncGet(c.conn, regPath); err == nil {
			h.add(c.id, regInput{}, regOutput{value: v}, call, r.now())
		}
		pace(ctx, rng)
	}
}

// counterWorkload increments the counter: read it with its version, then
// set it to one more on condition of that version.
func (r *chaosRun) counterWorkload(ctx context.Context, c *chaosClient, rng *rand.Rand) {
	h := r.ctr
	for i := 0; i < maxOpsPerClient && ctx.Err() == nil; i++ {
		call := r.now()
		v, st, err := syncGet(c.conn, ctrPath)
		if err != nil {
			pace(ctx, rng)
			continue
		}
		h.add(c.id, ctrInput{}, ctrOutput{read: counterState{v, int(st.Version)}}, call, r.now())
		in := ctrInput{cas: true, version: int(st.Version), value: v + 1}
		call = r.now()
		_, err = c.conn.Set(ctrPath, []byte(strconv.Itoa(v+1)), st.Version)
		ret := r.now()
		switch {
		case err == nil:
			h.add(c.id, in, ctrOutput{ok: true}, call, ret)
			r.count("counter", true, ret)
		case errors.Is(err, zk.ErrBadVersion):
			h.add(c.id, in, ctrOutput{}, call, ret)
		case definite(err):
			r.problem("counter", fmt.Sprintf("client %d: set: %v", c.id, err))
		default:
			h.add(c.id, in, ctrOutput{unknown: true}, call, -1)
			r.count("counter", false, ret)
		}
		pace(ctx, rng)
	}
}

// lockHold is one time a client held the lock, on the run's clock: from
// when it saw its node lowest to when it started deleting it.
type lockHold struct {
	client             int
	acquired, released int64
}

// lockWorkload takes and releases the lock recipe: an ephemeral
// sequential node under lockPath; the lowest holds. Nodes are named after
// the client, so a node whose create reply was lost is still recognised
// as this client's (and deleted on release).
func (r *chaosRun) lockWorkload(ctx context.Context, c *chaosClient, rng *rand.Rand) {
	prefix := fmt.Sprintf("c%d-", c.id)
	for i := 0; i < maxOpsPerClient && ctx.Err() == nil; i++ {
		_, err := c.conn.Create(lockPath+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if definite(err) {
			r.problem("lock", fmt.Sprintf("client %d: create: %v", c.id, err))
			return
		}
		if !r.awaitLowest(ctx, c, prefix, rng) {
			continue
		}
		acquired := r.now()
		r.count("lock", true, acquired)
		pace(ctx, rng)
		released := r.now()
		r.recordHold(lockHold{client: c.id, acquired: acquired, released: released})
		r.releaseLock(ctx, c, prefix)
		pace(ctx, rng)
	}
}

// awaitLowest polls until a node of prefix is the lowest under lockPath;
// false if ctx ends, a listing fails or the client has no node there (the
// caller creates one again, which is harmless: its other nodes are its
// own).
func (r *chaosRun) awaitLowest(ctx context.Context, c *chaosClient, prefix string, rng *rand.Rand) bool {
	for ctx.Err() == nil {
		if _, err := c.conn.Sync(lockPath); err != nil {
			return false
		}
		kids, _, err := c.conn.Children(lockPath)
		if err != nil {
			return false
		}
		if !slices.ContainsFunc(kids, func(k string) bool { return strings.HasPrefix(k, prefix) }) {
			return false // the create was lost: create again
		}
		sort.Slice(kids, func(i, j int) bool { return seqOf(kids[i]) < seqOf(kids[j]) })
		if strings.HasPrefix(kids[0], prefix) {
			return true
		}
		pace(ctx, rng)
	}
	return false
}

// seqOf is a sequential node's counter: its last ten characters.
func seqOf(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// releaseLock deletes every node of prefix under lockPath, retrying lost
// connections until ctx ends.
func (r *chaosRun) releaseLock(ctx context.Context, c *chaosClient, prefix string) {
	for ctx.Err() == nil {
		kids, _, err := c.conn.Children(lockPath)
		if err == nil {
			left := 0
			for _, k := range kids {
				if !strings.HasPrefix(k, prefix) {
					continue
				}
				if err := c.conn.Delete(lockPath+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
					left++
				}
			}
			if left == 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkHolds reports two clients holding the lock at once. A hold that
// may have outlived its session is left out: one not released a session
// timeout before its client saw the session expire (the expiry itself is
// reported; the server may have expired it any time in that span).
func checkHolds(holds []lockHold, expiredAt map[int][]int64) []string {
	var kept []lockHold
	for _, h := range holds {
		lost := false
		for _, at := range expiredAt[h.client] {
			lost = lost || (h.acquired <= at && h.released >= at-int64(chaosSessionTimeout))
		}
		if !lost {
			kept = append(kept, h)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].acquired < kept[j].acquired })
	var bad []string
	for i, cur := range kept {
		if i == 0 {
			continue
		}
		// last: the earlier hold that was released last.
		if last := latestRelease(kept[:i]); cur.acquired < last.released {
			bad = append(bad, fmt.Sprintf("client %d acquired at %v while client %d held it until %v",
				cur.client, time.Duration(cur.acquired), last.client, time.Duration(last.released)))
		}
	}
	return bad
}

// latestRelease returns the hold of holds released last.
func latestRelease(holds []lockHold) lockHold {
	last := holds[0]
	for _, h := range holds[1:] {
		if h.released > last.released {
			last = h
		}
	}
	return last
}
