//go:build testhooks

package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// A divergence injected into one member's tree (a faulty apply) is
// detected at the next checkpoint comparison: that member, and only it,
// is fenced, counts the mismatch, records the fence in its data directory
// and is still fenced after a restart. Run with -tags testhooks.
func TestDivergenceFenced(t *testing.T) {
	const interval = 200 * time.Millisecond
	c := newTestClusterWith(t, 3, func(cfg *Config) { cfg.DigestInterval = interval })
	lead := c.leader()
	victim := (lead + 1) % 3
	submitRetrying(t, c.nodes[lead], createTxn("/shared"))
	testutil.Eventually(t, 10*time.Second, "the write on every member", func() bool {
		for _, n := range c.nodes {
			if !hasNode(n, "/shared") {
				return false
			}
		}
		return true
	})
	if err := c.nodes[victim].Tree().DivergeForTest("/shared", []byte("only here")); err != nil {
		t.Fatal(err)
	}
	diverged := time.Now()
	for i := range 5 {
		submitRetrying(t, c.nodes[lead], createTxn(fmt.Sprintf("/after%d", i)))
	}
	testutil.Eventually(t, 10*time.Second, "the diverged member fenced", func() bool { return c.nodes[victim].Fenced() != nil })
	if took := time.Since(diverged); took > 3*interval+2*time.Second {
		t.Errorf("detected %v after the divergence, interval %v", took, interval)
	}
	if !errors.Is(c.nodes[victim].Fenced(), ErrFenced) || c.nodes[victim].DigestMismatches() < 1 {
		t.Fatalf("fence %v, mismatches %d", c.nodes[victim].Fenced(), c.nodes[victim].DigestMismatches())
	}
	for i, n := range c.nodes {
		if i != victim && (n.Fenced() != nil || n.DigestMismatches() != 0) {
			t.Fatalf("member %d fenced too: %v", i+1, n.Fenced())
		}
	}
	if _, err := os.Stat(filepath.Join(c.dirs[victim], fenceFile)); err != nil {
		t.Fatalf("fence not recorded: %v", err)
	}
	c.nodes[victim].Close()
	c.start(victim)
	if c.nodes[victim].Fenced() == nil {
		t.Fatal("a restart lifted the fence")
	}
}
