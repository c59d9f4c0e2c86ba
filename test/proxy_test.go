package test

import (
	"net"
	"sync"
	"testing"
	"time"
)

// linkProxy forwards TCP connections from a loopback port to a target and
// can cut them: while cut, existing connections are closed and new ones
// are refused. It can also delay them: each chunk read is written delay
// later. It stands for one direction of one member-to-member link (or a
// client's way to a member). mu guards cut, delay and conns.
type linkProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	delay time.Duration
	conns map[net.Conn]struct{}
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *linkProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *linkProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.mu.Unlock()
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.cut { // cut while dialing: setCut did not see this pair
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

// pipe copies src to dst, holding each chunk back by the delay in force
// when it was read, in order, and closes both when either side ends.
func (p *linkProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
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
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			for range chunks { // let the reader end
			}
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

// setCut cuts (true) or heals (false) the link.
func (p *linkProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]struct{}{}
	}
}
