package test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// linkState is what a linkProxy does with traffic.
type linkState int

const (
	// linkOpen forwards bytes both ways.
	linkOpen linkState = iota
	// linkCut closes the link's connections and refuses new ones, as a
	// network that resets connections.
	linkCut
	// linkFrozen keeps connections open and accepts new ones but moves no
	// byte until the link opens again, as a peer process that is stopped
	// (SIGSTOP): the other side notices only by its timeouts.
	linkFrozen
)

// linkProxy forwards TCP connections from a loopback port to a target and
// can cut or freeze them, or delay what they carry (each chunk read is
// written delay later). It stands for one direction of one member-to-member
// link (or a client's way to a member). mu guards state, delay and conns;
// flowing is signalled when state changes.
type linkProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	flowing *sync.Cond
	state   linkState
	delay   time.Duration
	conns   map[net.Conn]struct{}
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.flowing = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.setState(linkCut) })
	return p
}

func (p *linkProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *linkProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.current() == linkCut {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.state == linkCut { // cut while dialing: setState did not see this pair
			p.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

func (p *linkProxy) current() linkState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// pipe copies src to dst, holding each chunk back by the delay in force
// when it was read, and while the link is frozen, in order; it closes both
// when either side ends or the link is cut.
func (p *linkProxy) pipe(dst, src net.Conn) {
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks := make(chan chunk, 256)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(p.currentDelay())}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		src.Close()
		for range chunks { // let the reader end
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if !p.waitOpen() {
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

func (p *linkProxy) currentDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

// setDelay delays what the link carries from now on by d (0: no delay).
func (p *linkProxy) setDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

func (p *linkProxy) addr() string { return p.ln.Addr().String() }

// waitOpen blocks while the link is frozen; false when it was cut.
func (p *linkProxy) waitOpen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.state == linkFrozen {
		p.flowing.Wait()
	}
	return p.state == linkOpen
}

// setState opens, cuts or freezes the link; cutting closes its
// connections.
func (p *linkProxy) setState(s linkState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = s
	if s == linkCut {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]struct{}{}
	}
	p.flowing.Broadcast()
}

// setCut cuts (true) or heals (false) the link.
func (p *linkProxy) setCut(cut bool) {
	if cut {
		p.setState(linkCut)
	} else {
		p.setState(linkOpen)
	}
}

// TestLinkProxyStates: an open link echoes, a frozen one holds the bytes
// (the connection stays open) and delivers them when opened again, and a
// cut one closes its connections and every new one.
func TestLinkProxyStates(t *testing.T) {
	echoAddr := testutil.Serve(t, func(c net.Conn) { io.Copy(c, c); c.Close() })
	p := newLinkProxy(t, echoAddr)
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(p.port())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// echo writes send and reads back want within wait.
	echo := func(send, want string, wait time.Duration) error {
		if _, err := c.Write([]byte(send)); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != want {
			return fmt.Errorf("echo %q, want %q", buf, want)
		}
		return nil
	}
	if err := echo("a", "a", 2*time.Second); err != nil {
		t.Fatalf("open link: %v", err)
	}
	p.setState(linkFrozen)
	if err := echo("b", "b", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("frozen link: read gave %v, want a timeout", err)
	}
	p.setState(linkOpen)
	if err := echo("", "b", 2*time.Second); err != nil {
		t.Fatalf("opened again: the held byte did not arrive: %v", err)
	}
	p.setState(linkCut)
	if err := echo("c", "c", 2*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("cut link: read gave %v, want the connection closed", err)
	}
}
