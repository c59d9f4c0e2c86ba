package bench

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestLongestPause: the longest gap between acknowledgements that ends
// in a window, including the gap before the first and after the last
// acknowledgement.
func TestLongestPause(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	log := &PauseLog{Start: at(0), End: at(1000), Acked: []time.Time{at(10), at(20), at(300), at(310), at(320), at(900)}}
	cases := []struct {
		name     string
		from, to int
		want     time.Duration
		wantAt   int
	}{
		{"whole run", 0, 1000, 580 * time.Millisecond, 320},
		{"the gap ending in the window", 250, 350, 280 * time.Millisecond, 20},
		{"a gap that ends after the window is the next one's", 25, 200, 0, -1},
		{"the start", 0, 15, 10 * time.Millisecond, 0},
		{"the tail", 950, 1000, 100 * time.Millisecond, 900},
	}
	for _, tc := range cases {
		got, gotAt := log.LongestPause(at(tc.from), at(tc.to))
		wantAt := at(tc.wantAt)
		if tc.wantAt < 0 {
			wantAt = time.Time{}
		}
		if got != tc.want || !gotAt.Equal(wantAt) {
			t.Errorf("%s: %v at %v, want %v at %dms", tc.name, got, gotAt.Sub(t0), tc.want, tc.wantAt)
		}
	}
}

// TestReadPauseMarks parses marks and refuses malformed lines.
func TestReadPauseMarks(t *testing.T) {
	cases := []struct {
		name, in string
		want     int
		err      string
	}{
		{"two marks", "# restarts\nm1 100 200\n\nm2 300 400\n", 2, ""},
		{"missing field", "m1 100\n", 0, "want label start-ns end-ns"},
		{"not a number", "m1 x 200\n", 0, "bad times"},
		{"backwards", "m1 300 200\n", 0, "bad times"},
	}
	for _, tc := range cases {
		marks, err := ReadPauseMarks(strings.NewReader(tc.in))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case len(marks) != tc.want:
			t.Errorf("%s: %d marks, want %d", tc.name, len(marks), tc.want)
		}
	}
}

// TestPauseWriterSeesAnOutage writes to an in-process server through a
// proxy that the test cuts for 300 ms: the report's pause for that window
// covers the outage, and writes went on before and after it.
func TestPauseWriterSeesAnOutage(t *testing.T) {
	addr := startServer(t)
	p := newCutProxy(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *PauseLog, 1)
	go func() {
		log, err := RunPauseWriter(ctx, PauseConfig{Addrs: []string{p.addr()}, Interval: 5 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- log
	}()
	time.Sleep(300 * time.Millisecond)
	from := time.Now()
	p.cut(true)
	time.Sleep(300 * time.Millisecond)
	p.cut(false)
	time.Sleep(500 * time.Millisecond)
	to := time.Now()
	cancel()
	log := <-done
	if log == nil {
		t.Fatal("no log")
	}
	pause, _ := log.LongestPause(from, to)
	if pause < 300*time.Millisecond || pause > 2*time.Second {
		t.Fatalf("pause %v for a 300 ms outage", pause)
	}
	var b strings.Builder
	if err := log.WritePauseReport(&b, []PauseMark{{Label: "outage", From: from, To: to}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "outage") || log.Reconnects == 0 {
		t.Fatalf("report (reconnects %d):\n%s", log.Reconnects, b.String())
	}
	t.Logf("\n%s", b.String())
}

// cutProxy forwards loopback connections to a server; while cut, it
// closes what it has and refuses new ones.
type cutProxy struct {
	ln     net.Listener
	target string
	cutCh  chan bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cutCh: make(chan bool)}
	conns := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	stopped := make(chan struct{})
	go p.loop(conns, stopped)
	t.Cleanup(func() { ln.Close(); <-stopped })
	return p
}

// loop owns the proxy's state: whether it is cut and its open pairs.
func (p *cutProxy) loop(conns <-chan net.Conn, stopped chan<- struct{}) {
	defer close(stopped)
	cut := false
	var open []net.Conn
	closeAll := func() {
		for _, c := range open {
			c.Close()
		}
		open = nil
	}
	defer closeAll()
	for {
		select {
		case c, ok := <-conns:
			if !ok {
				return
			}
			if cut {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			open = append(open, c, s)
			go pipe(c, s)
			go pipe(s, c)
		case v := <-p.cutCh:
			cut = v
			if cut {
				closeAll()
			}
		}
	}
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }
func (p *cutProxy) cut(v bool)   { p.cutCh <- v }

// pipe copies from a to b and closes both at the end.
func pipe(a, b net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := a.Read(buf)
		if n > 0 {
			if _, werr := b.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	a.Close()
	b.Close()
}
