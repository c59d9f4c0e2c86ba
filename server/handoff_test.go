package server

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/test/ports"
)

// TestHandOffAndClose stops one member of a 3-member ensemble the way
// SIGTERM does (HandOffAndClose). A stopping leader hands its leadership
// over first: when the call returns, another member already leads, no
// election timeout later, and writes go on through the other members. A
// stopping follower just closes and the leader stays.
func TestHandOffAndClose(t *testing.T) {
	cases := []struct {
		name       string
		stopLeader bool
		timeout    time.Duration // 0: hand-off turned off
		// handedOver: the stopped member logs that it handed over, and
		// another member leads when the call returns.
		handedOver bool
	}{
		{"leader hands over", true, 5 * time.Second, true},
		{"leader with the hand-off off", true, 0, false},
		{"follower just stops", false, 5 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs [3]*testutil.LogCapture
			e := testutil.StartEnsemble(t, testutil.EnsembleSpec[*Server]{Size: 3, Ports: ports.ForServer(),
				Base: func(int) conf.Config { return opsConfig(t) },
				New: func(i int, cfg conf.Config) (*Server, error) {
					logger, capture := testutil.CaptureLogger(t, slog.LevelInfo)
					logs[i] = capture
					return New(Options{Config: cfg, Logger: logger})
				}})
			lead := -1
			testutil.Eventually(t, 15*time.Second, "a leader", func() bool {
				for i := range 3 {
					if e.Member(i).node.IsLeader() {
						lead = i
						return true
					}
				}
				return false
			})
			stop := lead
			if !tc.stopLeader {
				stop = (lead + 1) % 3
			}
			survivor := (stop + 1) % 3
			if survivor == lead && !tc.stopLeader {
				survivor = (stop + 2) % 3
			}
			c := opsClient(t, e.Member(survivor))
			if _, err := c.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create before: %v", err)
			}
			if err := e.Member(stop).HandOffAndClose(tc.timeout); err != nil {
				t.Fatalf("HandOffAndClose: %v", err)
			}
			leaders := 0
			for i := range 3 {
				if i != stop && e.Member(i).node.IsLeader() {
					leaders++
				}
			}
			// Without a hand-off only a stopped follower leaves a leader.
			if want := tc.handedOver || !tc.stopLeader; (leaders == 1) != want {
				t.Fatalf("%d of the running members lead right after the stop (hand-off %v)", leaders, tc.handedOver)
			}
			if got := len(logs[stop].Lines("handed leadership over before stopping")); (got > 0) != tc.handedOver {
				t.Fatalf("hand-off lines: %d, want hand-off %v:\n%s", got, tc.handedOver, logs[stop].String())
			}
			for i := range 5 {
				path := fmt.Sprintf("/after%d", i)
				var err error
				testutil.Eventually(t, 10*time.Second, "a write after the stop", func() bool {
					_, err = c.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
					return err == nil || err == zk.ErrNodeExists
				})
			}
		})
	}
}
