package test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// linkProxy forwards TCP connections from a loopback port to a target and
// can cut them: while cut, existing connections are closed and new ones
// are refused. It stands for one direction of one member-to-member link.
type linkProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
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
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close(); in.Close() }()
		go func() { io.Copy(in, out); out.Close(); in.Close() }()
	}
}

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
