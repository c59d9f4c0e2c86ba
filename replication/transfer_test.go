package replication

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// TestTransferLeadership hands leadership over in a 3-member ensemble,
// to the follower raft picks and to a named one, and checks that another
// member leads afterwards and that writes go on through every member.
func TestTransferLeadership(t *testing.T) {
	cases := []struct {
		name string
		// target picks the member to name, given the leader's index (-1:
		// name none).
		target func(lead int) int
	}{
		{"any up-to-date follower", func(int) int { return -1 }},
		{"named follower", func(lead int) int { return (lead + 2) % 3 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 3)
			lead := c.leader()
			for i := range 5 {
				await(t, c.nodes[lead].Submit(createTxn(fmt.Sprintf("/before%d", i))))
			}
			target := int64(0)
			if i := tc.target(lead); i >= 0 {
				target = int64(i + 1)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			got, err := c.nodes[lead].TransferLeadership(ctx, target)
			if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			t.Logf("leadership moved from %d to %d in %v", lead+1, got, time.Since(start))
			if got == int64(lead+1) || (target != 0 && got != target) {
				t.Fatalf("new leader %d (old %d, target %d)", got, lead+1, target)
			}
			if c.nodes[lead].IsLeader() {
				t.Fatal("the old leader still leads")
			}
			if now := c.leader(); now != int(got-1) {
				t.Fatalf("member %d leads, transfer reported %d", now+1, got)
			}
			for i, n := range c.nodes {
				o := submitRetrying(t, n, createTxn(fmt.Sprintf("/after%d", i)))
				if o.Err != nil || o.Result.Err != jute.OK {
					t.Fatalf("write through member %d after the transfer: %+v", i+1, o)
				}
			}
			c.converged()
		})
	}
}

// TestTransferLeadershipRefused covers the calls that cannot hand over:
// from a follower, to this member, to an unknown member, and on a
// standalone server.
func TestTransferLeadershipRefused(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	follower := (lead + 1) % 3
	standalone := openNode(t, t.TempDir(), false)
	cases := []struct {
		name   string
		node   *Node
		target int64
		want   error
	}{
		{"follower", c.nodes[follower], 0, ErrNotLeader},
		{"to itself", c.nodes[lead], int64(lead + 1), ErrNoTransferTarget},
		{"to a stranger", c.nodes[lead], 9, ErrNoTransferTarget},
		{"standalone", standalone, 0, ErrNoTransferTarget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := tc.node.TransferLeadership(ctx, tc.target)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if !c.nodes[lead].IsLeader() {
		t.Fatal("a refused transfer moved leadership")
	}
}

// TestTransferLeadershipSkipsADownMember stops one follower and hands
// leadership over at once, before the leader has noticed: raft may pick
// the stopped follower (both have the whole log), and the hand-off must
// still end on the live one.
func TestTransferLeadershipSkipsADownMember(t *testing.T) {
	for _, which := range []int{1, 2} {
		t.Run(fmt.Sprintf("follower %d of 2 down", which), func(t *testing.T) {
			c := newTestCluster(t, 3)
			lead := c.leader()
			down := (lead + which) % 3
			live := 3 - lead - down
			c.nodes[down].Close()
			c.nodes[down] = nil
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := c.nodes[lead].TransferLeadership(ctx, 0)
			if err != nil {
				t.Fatalf("transfer with member %d down: %v", down+1, err)
			}
			if got != int64(live+1) {
				t.Fatalf("new leader %d, want the live member %d", got, live+1)
			}
		})
	}
}

// TestTransferLeadershipHoldsWrites submits writes to the leader without
// pause while it hands its leadership over: the writes that arrive during
// the hand-off wait for it and then go to the new leader, so none fails.
func TestTransferLeadershipHoldsWrites(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	stop := make(chan struct{})
	type result struct{ ok, failed, lost int }
	done := make(chan result, 1)
	go func() { // reports through done only: a t.Fatal here would leave the test waiting
		var r result
		defer func() { done <- r }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			select {
			case o := <-c.nodes[lead].Submit(createTxn(fmt.Sprintf("/held%d", i))):
				if o.Err != nil {
					r.failed++
				} else {
					r.ok++
				}
			case <-time.After(15 * time.Second):
				r.lost++
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes[lead].TransferLeadership(ctx, 0); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not stop within 30s")
	}
	t.Logf("%d writes committed, %d failed", r.ok, r.failed)
	if r.lost > 0 {
		t.Fatalf("a write had no outcome within 15s (%d committed, %d failed before it)", r.ok, r.failed)
	}
	if r.failed > 0 || r.ok == 0 {
		t.Fatalf("%d writes failed (%d committed) across the hand-off", r.failed, r.ok)
	}
}
