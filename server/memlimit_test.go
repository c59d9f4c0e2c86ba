package server

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/test/ports"
)

// TestMemoryGuardHysteresis follows the refusal state through a series of
// live heap samples against a limit of 1000 bytes: refusals start at 800
// (refuseShare) and stop below 750 (resumeShare).
func TestMemoryGuardHysteresis(t *testing.T) {
	tests := []struct {
		name    string
		samples []int64
		want    []bool // refusing after each sample
	}{
		{"below", []int64{0, 500, 799}, []bool{false, false, false}},
		{"at the threshold", []int64{700, 800}, []bool{false, true}},
		{"stays refusing between the thresholds", []int64{900, 799, 750}, []bool{true, true, true}},
		{"resumes below the lower one", []int64{900, 749, 799}, []bool{true, false, false}},
		{"refuses again", []int64{900, 100, 850}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newMemoryGuard(1000, func() int64 { return 0 }, slog.New(slog.DiscardHandler))
			for i, live := range tt.samples {
				g.update(live)
				if got := g.stats(); got.Refusing != tt.want[i] || got.LiveHeapBytes != live {
					t.Fatalf("after sample %d (%d bytes): %+v, want refusing %v", i, live, got, tt.want[i])
				}
			}
		})
	}
}

// TestMemoryGuardRefusalLog counts every refusal and logs one line per
// refusalLogEvery, which counts the refusals since the line before.
func TestMemoryGuardRefusalLog(t *testing.T) {
	var buf strings.Builder
	g := newMemoryGuard(1000, func() int64 { return 0 }, slog.New(slog.NewTextHandler(&buf, nil)))
	start := time.Unix(1000, 0)
	steps := []struct {
		at        time.Duration
		wantLines int
	}{
		{0, 1}, {time.Second, 1}, {refusalLogEvery - 1, 1}, {refusalLogEvery, 2}, {refusalLogEvery + 1, 2},
	}
	for i, s := range steps {
		g.noteRefusal(jute.OpCreate, "/x", start.Add(s.at))
		if n := strings.Count(buf.String(), "write refused"); n != s.wantLines {
			t.Fatalf("after refusal %d: %d log lines, want %d:\n%s", i+1, n, s.wantLines, buf.String())
		}
	}
	if got := g.stats().RefusedWrites; got != int64(len(steps)) {
		t.Errorf("refused writes = %d, want %d", got, len(steps))
	}
	if !strings.Contains(buf.String(), "refused_since_last_line=3") {
		t.Errorf("the second line does not count the three refusals since the first:\n%s", buf.String())
	}
}

// liveHeap is the live heap the last collection marked, after one more.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: metricLiveHeap}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestMemoryLimitRefusesGrowingWrites fills a server that has a small
// memory limit until it refuses creates, checks that the refusals carry
// ThrottledOp and that reads, deletes and shrinking writes still work,
// deletes what it made, and checks that creates are accepted again.
func TestMemoryLimitRefusesGrowingWrites(t *testing.T) {
	const (
		headroom = 48 << 20  // live heap the test may add before refusals
		nodeSize = 256 << 10 // data of each znode it fills with
		maxNodes = 1000      // bound on the fill: four times the headroom
	)
	cfg := opsConfig(t)
	// Refusals start once the live heap (the whole test process's) has
	// grown by about headroom from now.
	cfg.MemoryLimitBytes = int64(float64(liveHeap()+headroom) / refuseShare)
	s := startOpsServer(t, Options{Config: cfg})
	c := opsClient(t, s)
	throttled := fmt.Sprintf("unknown error: %v", zk.ErrCode(jute.ThrottledOp)) // go-zookeeper has no name for -127

	data := make([]byte, nodeSize)
	var made []string
	var refusal error
	for i := range maxNodes {
		p := fmt.Sprintf("/fill-%04d", i)
		if _, err := c.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			refusal = err
			break
		}
		made = append(made, p)
	}
	if refusal == nil {
		t.Fatalf("%d creates of %d bytes with a limit of %d bytes: none refused (%+v)", maxNodes, nodeSize, cfg.MemoryLimitBytes, s.Stats().Memory)
	}
	if refusal.Error() != throttled || len(made) < 4 {
		t.Fatalf("after %d creates: %v, want %q", len(made), refusal, throttled)
	}
	if st := s.Stats().Memory; !st.Refusing || st.RefusedWrites == 0 || st.LimitBytes != cfg.MemoryLimitBytes {
		t.Fatalf("memory stats %+v: want refusing, refusals counted, limit %d", st, cfg.MemoryLimitBytes)
	}
	t.Logf("refused after %d znodes of %d bytes: %+v", len(made), nodeSize, s.Stats().Memory)

	// Writes that would grow the tree are refused; the rest works.
	checks := []struct {
		name    string
		do      func() error
		refused bool
	}{
		{"read", func() error { _, _, err := c.Get(made[0]); return err }, false},
		{"children", func() error { _, _, err := c.Children("/"); return err }, false},
		{"exists with a watch", func() error { _, _, _, err := c.ExistsW("/none"); return err }, false},
		{"larger setData", func() error { _, err := c.Set(made[0], make([]byte, nodeSize+1), -1); return err }, true},
		{"same-size setData", func() error { _, err := c.Set(made[0], data, -1); return err }, false},
		{"smaller setData", func() error { _, err := c.Set(made[1], []byte("small"), -1); return err }, false},
		{"ephemeral create", func() error { _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); return err }, true},
		{"sequential create", func() error { _, err := c.Create("/s-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); return err }, true},
		{"container create", func() error {
			_, err := c.CreateContainer("/c", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
			return err
		}, true},
		{"multi with a create", func() error {
			_, err := c.Multi(&zk.CheckVersionRequest{Path: made[0], Version: -1},
				&zk.CreateRequest{Path: "/m", Acl: zk.WorldACL(zk.PermAll)})
			return err
		}, true},
		{"multi of a delete", func() error { _, err := c.Multi(&zk.DeleteRequest{Path: made[2], Version: -1}); return err }, false},
		{"delete", func() error { return c.Delete(made[3], -1) }, false},
	}
	for _, ck := range checks {
		zxid := s.node.LastZxid()
		err := ck.do()
		switch {
		case ck.refused && (err == nil || !strings.Contains(err.Error(), "-127")):
			t.Errorf("%s near the limit: %v, want ThrottledOp (-127)", ck.name, err)
		case ck.refused && s.node.LastZxid() != zxid:
			// Refused before the log: nothing proposed, no zxid spent.
			t.Errorf("%s near the limit: the last zxid moved from %#x to %#x", ck.name, zxid, s.node.LastZxid())
		case !ck.refused && err != nil:
			t.Errorf("%s near the limit: %v, want it served", ck.name, err)
		}
	}
	if ok, _, err := c.Exists("/m"); err != nil || ok {
		t.Errorf("the refused multi's create: exists %v (%v), want nothing made", ok, err)
	}

	for _, p := range made[4:] {
		if err := c.Delete(p, -1); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	// The guard forces a collection after forceGCAfter without one and
	// samples every memorySampleInterval: creates resume within seconds.
	var err error
	testutil.Eventually(t, 15*time.Second, "a create accepted after the deletes", func() bool {
		_, err = c.Create("/after", data, 0, zk.WorldACL(zk.PermAll))
		return err == nil
	})
	if st := s.Stats().Memory; st.Refusing {
		t.Errorf("memory stats %+v after the deletes: still refusing", st)
	}
}

// TestMemoryLimitOnAnEnsemble fills a 3-member ensemble through a
// follower until the follower refuses a create, and checks that the
// refusal reached no member: every member applied the same log (none is
// fenced for a differing digest) and none holds the refused znode. Then it
// deletes and checks that creates through the follower resume. The members
// share the test's heap, so all of them near the limit together.
func TestMemoryLimitOnAnEnsemble(t *testing.T) {
	const (
		headroom = 64 << 20 // three trees, three log caches of up to 8 MiB
		nodeSize = 256 << 10
		maxNodes = 400
	)
	limit := int64(float64(liveHeap()+headroom) / refuseShare)
	e := testutil.StartEnsemble(t, testutil.EnsembleSpec[*Server]{Size: 3, Ports: ports.ForServer(),
		Base: func(int) conf.Config {
			cfg := opsConfig(t)
			cfg.MemoryLimitBytes = limit
			return cfg
		},
		New: func(_ int, cfg conf.Config) (*Server, error) {
			return New(Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelError)})
		}})
	leader := -1
	testutil.Eventually(t, 15*time.Second, "a leader", func() bool {
		for i := range 3 {
			if e.Member(i).node.IsLeader() {
				leader = i
				return true
			}
		}
		return false
	})
	follower := (leader + 1) % 3
	c, _ := testutil.Connect(t, e.Addr(follower), 10*time.Second)

	data := make([]byte, nodeSize)
	var made []string
	var refusal error
	for i := range maxNodes {
		p := fmt.Sprintf("/fill-%04d", i)
		if _, err := c.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			refusal = err
			break
		}
		made = append(made, p)
	}
	if refusal == nil || !strings.Contains(refusal.Error(), "-127") {
		t.Fatalf("after %d creates through member %d: %v, want ThrottledOp (-127)", len(made), follower+1, refusal)
	}
	t.Logf("member %d refused after %d znodes of %d bytes: %+v", follower+1, len(made), nodeSize, e.Member(follower).Stats().Memory)
	refused := fmt.Sprintf("/fill-%04d", len(made))
	if _, err := c.Sync("/"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	for i := range 3 {
		m := e.Member(i)
		if _, code := m.node.Tree().Exists(refused, nil); code != jute.NoNode {
			t.Errorf("member %d: the refused %s: %v, want NoNode", i+1, refused, code)
		}
		if err := m.node.Fenced(); err != nil {
			t.Errorf("member %d fenced: %v", i+1, err)
		}
	}

	for _, p := range made {
		if err := c.Delete(p, -1); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	var err error
	testutil.Eventually(t, 30*time.Second, "a create accepted after the deletes", func() bool {
		_, err = c.Create("/after", data, 0, zk.WorldACL(zk.PermAll))
		return err == nil
	})
	for i := range 3 {
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("/after on member %d", i+1), func() bool {
			_, code := e.Member(i).node.Tree().Exists("/after", nil)
			return code == jute.OK
		})
		// /after was written after the refused create in the session's
		// order: had the refusal been proposed, every member would hold it.
		if _, code := e.Member(i).node.Tree().Exists(refused, nil); code != jute.NoNode {
			t.Errorf("member %d: the refused %s: %v after /after, want NoNode", i+1, refused, code)
		}
		if err := e.Member(i).node.Fenced(); err != nil {
			t.Errorf("member %d fenced: %v", i+1, err)
		}
	}
}
