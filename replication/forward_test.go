package replication

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// pauseProxy relays TCP connections to target until paused; from then on
// it keeps every connection open and moves no byte, as when the target's
// process is stopped (SIGSTOP). mu guards conns and paused.
type pauseProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	paused chan struct{} // closed by pause
	done   chan struct{} // closed by close
	wg     sync.WaitGroup
}

func newPauseProxy(t *testing.T, target string) *pauseProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pauseProxy{ln: ln, target: target, paused: make(chan struct{}), done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *pauseProxy) addr() string { return p.ln.Addr().String() }

func (p *pauseProxy) pause() { close(p.paused) }

func (p *pauseProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.relay(up, c)
		go p.relay(c, up)
	}
}

// relay copies src to dst until either closes or the proxy pauses; a
// paused relay holds what it read and waits for close.
func (p *pauseProxy) relay(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.paused:
			<-p.done
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			dst.Close()
			return
		}
	}
}

func (p *pauseProxy) close() {
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// newPausableCluster starts an in-memory cluster in which every member
// reaches the others' forwarding ports through a pauseProxy per target.
func newPausableCluster(t *testing.T, size int) (*testCluster, []*pauseProxy) {
	c := &testCluster{t: t}
	proxies := make([]*pauseProxy, size)
	c.cfgHook = func(cfg *Config, _ *seams) {
		peers := append([]Peer(nil), cfg.Peers...)
		for i := range peers {
			if peers[i].ID == cfg.ServerID {
				continue
			}
			if proxies[i] == nil {
				proxies[i] = newPauseProxy(t, peers[i].ForwardAddr)
			}
			peers[i].ForwardAddr = proxies[i].addr()
		}
		cfg.Peers = peers
	}
	c.startMembers(size, true)
	return c, proxies
}

// TestClusterWritesPassAPausedOldLeader pauses the leader's forwarding port
// while both followers have writes forwarded to it (more than the batcher
// keeps out, maxUnappliedEntries), then cuts its raft links. The other two
// elect a leader among themselves, and both must take writes again within
// syncLimit-like bounds: their forwarded writes to the old leader fail as
// soon as raft reports the change, instead of holding each member's
// collector, and with it every later write (on the member that became
// leader: the whole ensemble's), until the old leader wakes up.
func TestClusterWritesPassAPausedOldLeader(t *testing.T) {
	c, proxies := newPausableCluster(t, 3)
	lead := c.leader()
	proxies[lead].pause()
	var stuck []<-chan Outcome
	for i, n := range c.nodes {
		if i == lead {
			continue
		}
		for k := 0; k < 2*maxUnappliedEntries; k++ {
			stuck = append(stuck, n.Submit(createTxn(fmt.Sprintf("/stuck-%d-%d", i, k))))
		}
	}
	time.Sleep(100 * time.Millisecond) // the batches reach the paused proxy
	c.isolate(lead)
	start := time.Now()
	const bound = 3 * time.Second // an election (250 ms timeouts) and a retry, with room for a loaded machine
	for i, n := range c.nodes {
		if i == lead {
			continue
		}
		path := fmt.Sprintf("/after-%d", i)
		var o Outcome
		for time.Since(start) < bound {
			select {
			case o = <-n.Submit(createTxn(path)):
			case <-time.After(bound - time.Since(start)):
				t.Fatalf("member %d: a write is still pending %v after the old leader was cut off", i+1, time.Since(start).Round(time.Millisecond))
			}
			if o.Err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("member %d: no write committed within %v of the old leader's cut-off: %+v", i+1, bound, o)
		}
	}
	t.Logf("both members took writes %v after the old leader was cut off", time.Since(start).Round(time.Millisecond))
	for _, ch := range stuck {
		select {
		case <-ch: // failed (the old leader never answered) or, if the new leader had the entry, committed
		case <-time.After(bound):
			t.Fatal("a write forwarded to the paused old leader is still pending")
		}
	}
}
