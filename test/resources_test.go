package test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// resourceTests gates the flood tests: they move gigabytes over loopback
// and take minutes (make resources).
func resourceTests(t *testing.T) {
	t.Helper()
	if os.Getenv("ZK_RESOURCE_TESTS") == "" {
		t.Skip("flood test: set ZK_RESOURCE_TESTS=1 (make resources)")
	}
}

// rssKiB reads a process's resident set size (VmRSS) from /proc.
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// dirBytes is the apparent size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return total
}

// watchFlood samples the server's RSS and, every 300 ms, times a new
// client's handshake plus one exists, until stop is called.
type watchFlood struct {
	stop     chan struct{}
	done     sync.WaitGroup
	peakRSS  int64
	slowest  time.Duration
	probes   int
	probeErr error
}

func startWatch(t *testing.T, p *process) *watchFlood {
	w := &watchFlood{stop: make(chan struct{})}
	w.done.Add(2)
	go func() {
		defer w.done.Done()
		for {
			w.peakRSS = max(w.peakRSS, rssKiB(t, p.cmd.Process.Pid))
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer w.done.Done()
		for {
			start := time.Now()
			if err := probe(p.addr); err != nil && w.probeErr == nil {
				w.probeErr = err
			}
			w.slowest = max(w.slowest, time.Since(start))
			w.probes++
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *watchFlood) end() { close(w.stop); w.done.Wait() }

// probe connects a new session, reads /big with exists, and closes the
// connection (the session expires).
func probe(addr string) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	req := jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	req = jute.AppendFrame(req, &jute.RequestHeader{Xid: 1, Type: jute.OpExists}, &jute.PathWatchRequest{Path: "/big"})
	if _, err := nc.Write(req); err != nil {
		return fmt.Errorf("probe write: %w", err)
	}
	for i := range 2 {
		if _, err := jute.ReadFrame(br, 1<<20, nil); err != nil {
			return fmt.Errorf("probe reply %d: %w", i, err)
		}
	}
	return nil
}

// flood opens conns sessions, each pipelining n setData requests of data
// to path, and reads every reply; it returns the replies' error codes
// counted.
func flood(t *testing.T, addr string, conns, n int, path string, data []byte) map[jute.Code]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[jute.Code]int{}
	var wg sync.WaitGroup
	for range conns {
		r := dialRaw(t, addr)
		if _, err := r.handshake(jute.ConnectRequest{TimeOut: 30000}); err != nil {
			t.Fatalf("flood handshake: %v", err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range n {
				frame := jute.AppendFrame(nil, &jute.RequestHeader{Xid: int32(i + 1), Type: jute.OpSetData},
					&jute.SetDataRequest{Path: path, Data: data, Version: -1})
				r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
				if _, err := r.c.Write(frame); err != nil {
					t.Errorf("flood write %d: %v", i, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range n {
				b, err := r.readFrame(60 * time.Second)
				if err != nil {
					t.Errorf("flood read: %v", err)
					return
				}
				var h jute.ReplyHeader
				h.Decode(jute.NewDecoder(b))
				mu.Lock()
				codes[h.Err]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return codes
}

// TestFloodsKeepMemoryBounded runs the built server and floods it with
// 1 MB setData requests to a missing znode (all rejected), then with
// accepted 512 KiB setData requests. During each flood new clients keep
// completing a handshake and a read within 5 s, and the server's RSS stays
// under a bound; after them the RSS falls back, and the rejected writes
// cost the log a few bytes each.
func TestFloodsKeepMemoryBounded(t *testing.T) {
	resourceTests(t)
	dir := t.TempDir()
	p := startProcess(t, dir, freePort(t))
	r := dialRaw(t, p.addr)
	if _, err := r.handshake(jute.ConnectRequest{TimeOut: 30000}); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if h, _ := r.call(jute.OpCreate, &jute.CreateRequest{Path: "/big", ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}}); h.Err != jute.OK {
		t.Fatalf("create /big: %v", h.Err)
	}
	time.Sleep(2 * time.Second)
	idle := rssKiB(t, p.cmd.Process.Pid)
	t.Logf("idle RSS %d KiB", idle)
	const rssBoundKiB = 512 << 10

	rejected := []struct {
		name          string
		conns, n      int
		path          string
		size          int
		want          jute.Code
		logBytesPerOp int64 // bound on data dir growth per request (0: not checked)
	}{
		{"rejected 1 MB setData", 8, 400, "/missing", 1000000, jute.NoNode, 1024},
		{"accepted 512 KiB setData", 4, 200, "/big", 512 << 10, jute.OK, 0},
	}
	for _, tt := range rejected {
		before := dirBytes(t, filepath.Join(dir, "data"))
		w := startWatch(t, p)
		start := time.Now()
		codes := flood(t, p.addr, tt.conns, tt.n, tt.path, bytes.Repeat([]byte{'x'}, tt.size))
		took := time.Since(start)
		w.end()
		grew := dirBytes(t, filepath.Join(dir, "data")) - before
		t.Logf("%s: %d×%d requests in %v, replies %v, peak RSS %d KiB, %d probes, slowest %v, data dir +%d bytes",
			tt.name, tt.conns, tt.n, took, codes, w.peakRSS, w.probes, w.slowest, grew)
		if codes[tt.want] != tt.conns*tt.n {
			t.Errorf("%s: replies %v, want %d × %v", tt.name, codes, tt.conns*tt.n, tt.want)
		}
		if w.probeErr != nil || w.slowest > 5*time.Second || w.probes < 2 {
			t.Errorf("%s: a new client during the flood: err %v, slowest %v (want < 5 s)", tt.name, w.probeErr, w.slowest)
		}
		if w.peakRSS > rssBoundKiB {
			t.Errorf("%s: peak RSS %d KiB, want at most %d KiB", tt.name, w.peakRSS, rssBoundKiB)
		}
		// The WAL preallocates 64 MiB segments: one more may appear.
		if limit := int64(64<<20) + tt.logBytesPerOp*int64(tt.conns*tt.n); tt.logBytesPerOp > 0 && grew > limit {
			t.Errorf("%s: data dir grew %d bytes, want at most %d", tt.name, grew, limit)
		}
	}
	// Go's runtime returns freed memory when a collection has run (every
	// 2 minutes at the latest on an idle server) and then keeps about its
	// heap goal: the bound is relative, not 2 × idle.
	ended := time.Now()
	deadline := ended.Add(150 * time.Second)
	const settledKiB = 128 << 10
	var now int64
	for {
		now = rssKiB(t, p.cmd.Process.Pid)
		if now <= idle+settledKiB || time.Now().After(deadline) {
			break
		}
		if s := int(time.Since(ended).Seconds()); s%15 == 0 {
			t.Logf("RSS %d KiB %d s after the floods", now, s)
		}
		time.Sleep(time.Second)
	}
	t.Logf("RSS %d KiB %v after the floods (idle %d KiB)", now, time.Since(ended).Round(time.Second), idle)
	if now > idle+settledKiB {
		t.Errorf("RSS %d KiB 150 s after the floods, want at most idle + %d KiB", now, settledKiB)
	}
}
