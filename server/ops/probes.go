package ops

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Kubernetes probes on the AdminServer port:
//
//   - GET /live answers 200 while the process is up and not wedged: its
//     tree can be read within liveTimeout. It does not depend on the
//     ensemble, so a member cut off from its quorum is not restarted.
//   - GET /ready answers 200 only while the member serves clients, decided
//     as `zkserverd healthcheck` decides it (cmd/zkserverd/health.go): the
//     server serves read-write (a quorum and a leader, caught up, not
//     fenced, not in read-only mode) and a session can be created and
//     closed on its client port (ProbeSession). Otherwise 503.
//
// Both answer a one-line text/plain reason; HEAD is answered too.

// liveTimeout bounds /live's read of the tree.
const liveTimeout = 2 * time.Second

// readyTimeout bounds /ready's session probe; Kubernetes' default probe
// timeout is 1 s.
const readyTimeout = 900 * time.Millisecond

// probes serves /ready and /live for one server. inflight is the pending
// tree read of /live, shared by the probes that arrive while it runs, so
// that a wedged tree holds one goroutine, not one per probe.
type probes struct {
	o *Surfaces

	mu       sync.Mutex
	inflight chan struct{} // closed when the pending read returns
}

func newProbes(o *Surfaces) *probes { return &probes{o: o} }

// serveLive answers /live.
func (p *probes) serveLive(w http.ResponseWriter, r *http.Request) {
	if !probeMethod(w, r) {
		return
	}
	select {
	case <-p.treeRead():
		probeReply(w, http.StatusOK, "live")
	case <-time.After(liveTimeout):
		probeReply(w, http.StatusServiceUnavailable, fmt.Sprintf("not live: the tree could not be read within %v", liveTimeout))
	}
}

// treeRead starts a read of the root znode unless one is pending, and
// returns the channel closed when it completes.
func (p *probes) treeRead() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight != nil {
		return p.inflight
	}
	done := make(chan struct{})
	p.inflight = done
	go func() {
		p.o.st.Replica().Tree().GetData("/", nil, nil)
		p.mu.Lock()
		p.inflight = nil
		p.mu.Unlock()
		close(done)
	}()
	return done
}

// serveReady answers /ready.
func (p *probes) serveReady(w http.ResponseWriter, r *http.Request) {
	if !probeMethod(w, r) {
		return
	}
	mode, err := p.readiness()
	if err != nil {
		probeReply(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	probeReply(w, http.StatusOK, "ready: "+mode)
}

// readiness returns the member's mode when it serves clients, else why
// not.
func (p *probes) readiness() (string, error) {
	st := p.o.st
	mode := st.Mode()
	switch {
	case st.ReadOnly():
		return "", errors.New("read-only mode (no quorum)")
	case !st.Serving():
		return "", fmt.Errorf("not serving (mode %s)", mode)
	}
	if err := st.Replica().Fenced(); err != nil {
		return "", fmt.Errorf("fenced: %w", err)
	}
	if st.Addr() == nil {
		return mode, nil // only a TLS client port: the state decides
	}
	_, err := ProbeSession(dialable(st.Addr()), readyTimeout)
	if err != nil && !errors.Is(err, ErrSessionNotClosed) {
		return "", fmt.Errorf("cannot create sessions: %w", err)
	}
	return mode, nil
}

// dialable turns a listener's address into one to dial on this machine
// (an unspecified IP becomes 127.0.0.1).
func dialable(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := ta.IP.String()
	if ta.IP == nil || ta.IP.IsUnspecified() {
		host = "127.0.0.1" // a wildcard listener accepts IPv4 too
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}

// probeMethod allows GET and HEAD, answering 405 otherwise.
func probeMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
	return false
}

// probeReply writes a probe's status and one-line reason.
func probeReply(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	io.WriteString(w, reason+"\n")
}
