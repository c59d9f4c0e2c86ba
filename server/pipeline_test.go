package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestEndedConnectionsGiveBackEmptyPipelineQueues: a connection that ends
// with requests pipelined puts its queue back for the next connection, and
// the queue it puts back holds nothing of it.
func TestEndedConnectionsGiveBackEmptyPipelineQueues(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	const sessions, requests = 8, 50
	// All sessions are open at once, so that each has a queue of its own.
	clients := make([]*zk.Conn, sessions)
	for i := range clients {
		clients[i] = opsClient(t, s)
	}
	for i, c := range clients {
		path := fmt.Sprintf("/q%d", i)
		if _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
		var wg sync.WaitGroup
		for range requests { // concurrent calls share the connection's pipeline
			wg.Add(1)
			go func() { defer wg.Done(); c.Get(path) }()
		}
		wg.Wait()
	}
	for _, c := range clients {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.connections()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 10 s after their sessions closed", len(s.connections()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// sync.Pool may drop a queue (it does at random under -race, and it
	// keeps one per processor out of another's reach), so not all eight
	// come back; one is enough to show the reuse.
	reused := 0
	for q, ok := s.pipelines.Get().(chan *pending); ok; q, ok = s.pipelines.Get().(chan *pending) {
		reused++
		if len(q) != 0 || cap(q) != pipelineDepth {
			t.Fatalf("a queue given back holds %d items (capacity %d), want 0 (capacity %d)", len(q), cap(q), pipelineDepth)
		}
	}
	if reused == 0 {
		t.Fatalf("none of %d ended connections gave its pipeline queue back", sessions)
	}
}
