package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrProfile is wrapped by every profile fetch failure. Such failures are
// reported as warnings in ServerProfiles, never as a failed run.
var ErrProfile = errors.New("bench: profile")

// Profile fetch limits.
const (
	// profileSlack is added to a CPU profile's length for the request's
	// deadline (the server encodes the profile after it stops sampling).
	profileSlack = 30 * time.Second
	// heapTimeout bounds the heap profile request.
	heapTimeout = 30 * time.Second
	// maxProfileBytes bounds a downloaded profile.
	maxProfileBytes = 256 << 20
)

// ServerProfiles names the pprof files fetched from one server's
// net/http/pprof endpoint (Config.PprofURLs) during a run.
type ServerProfiles struct {
	// URL is the endpoint's base, e.g. http://127.0.0.1:6060.
	URL string `json:"url"`
	// CPU is the CPU profile file covering the measured period (CPUSeconds
	// long, started when measuring started); empty when it failed.
	CPU        string `json:"cpu,omitempty"`
	CPUSeconds int    `json:"cpu_seconds,omitempty"`
	// Heap is the heap profile file taken at the end of the run; empty when
	// it failed.
	Heap string `json:"heap,omitempty"`
	// Warnings says why a profile is missing.
	Warnings []string `json:"warnings,omitempty"`
}

// NormalizePprofURL turns "host:port", "http://host:port/" or
// "http://host:port/debug/pprof/" into the base URL "http://host:port"
// (with any path prefix before /debug/pprof kept).
func NormalizePprofURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: url %q: %v", ErrProfile, s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: url %q: want http://host:port", ErrProfile, s)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/debug/pprof")
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimSuffix(u.String(), "/"), nil
}

// profileSeconds is the CPU profile length for a measured period d: whole
// seconds, rounded up, at least one (pprof's seconds parameter).
func profileSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// profileBase returns the file name stem <name>-<label>, with member
// (1-based) appended as .<member> when there are several servers. Characters
// unsafe in file names become '_'.
func profileBase(name, label string, member, members int) string {
	base := name
	if label != "" {
		base += "-" + label
	}
	if members > 1 {
		base += "." + strconv.Itoa(member)
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, base)
}

// profiler fetches profiles from the servers of one run. Its methods are
// called from the run's goroutine; a nil *profiler does nothing.
type profiler struct {
	client  *http.Client
	dir     string
	seconds int
	started bool
	servers []*serverProfiler
}

// serverProfiler is one server's fetches. The CPU fetch goroutine writes
// out and then closes done; out is read only after done is closed.
type serverProfiler struct {
	out  ServerProfiles
	base string // file name stem
	done chan struct{}
}

// newProfiler returns nil when cfg asks for no profiles.
func newProfiler(cfg Config) *profiler {
	if len(cfg.PprofURLs) == 0 {
		return nil
	}
	p := &profiler{client: cfg.HTTPClient, dir: cfg.ProfileDir, seconds: profileSeconds(cfg.Duration)}
	if p.client == nil {
		p.client = http.DefaultClient
	}
	if p.dir == "" {
		p.dir = "."
	}
	for i, u := range cfg.PprofURLs {
		p.servers = append(p.servers, &serverProfiler{
			out:  ServerProfiles{URL: u},
			base: profileBase(cfg.Name, cfg.Label, i+1, len(cfg.PprofURLs)),
			done: make(chan struct{}),
		})
	}
	return p
}

// startCPU begins a CPU profile of p.seconds on every server, in the
// background. Only the first call does anything; the fetches end with ctx.
func (p *profiler) startCPU(ctx context.Context) {
	if p == nil || p.started {
		return
	}
	p.started = true
	for _, s := range p.servers {
		go func() {
			defer close(s.done)
			s.out.CPUSeconds = p.seconds
			path := "/debug/pprof/profile?seconds=" + strconv.Itoa(p.seconds)
			timeout := time.Duration(p.seconds)*time.Second + profileSlack
			file, err := p.save(ctx, s.out.URL+path, timeout, s.base+".cpu.pprof")
			s.record(&s.out.CPU, file, "cpu", err)
		}()
	}
}

// finish waits for the CPU profiles, fetches the heap profiles and returns
// what was saved; nil for a nil profiler.
func (p *profiler) finish(ctx context.Context) []ServerProfiles {
	if p == nil {
		return nil
	}
	out := make([]ServerProfiles, len(p.servers))
	for i, s := range p.servers {
		if p.started {
			<-s.done // the fetch is bound to the run's context
		} else {
			s.out.Warnings = append(s.out.Warnings, "cpu profile: the measured period never started")
		}
		file, err := p.save(ctx, s.out.URL+"/debug/pprof/heap?gc=1", heapTimeout, s.base+".heap.pprof")
		s.record(&s.out.Heap, file, "heap", err)
		out[i] = s.snapshot()
	}
	return out
}

// record stores a fetch's file or its failure.
func (s *serverProfiler) record(dst *string, file, kind string, err error) {
	if err != nil {
		s.out.Warnings = append(s.out.Warnings, fmt.Sprintf("%s profile: %v", kind, err))
		return
	}
	*dst = file
}

// snapshot copies the result so the caller owns its slices.
func (s *serverProfiler) snapshot() ServerProfiles {
	out := s.out
	out.Warnings = append([]string(nil), s.out.Warnings...)
	return out
}

// save GETs u and writes the body to name in p.dir, returning the path
// written. The body must be a gzip stream, as Go's pprof profiles are.
func (p *profiler) save(ctx context.Context, u string, timeout time.Duration, name string) (string, error) {
	data, err := p.get(ctx, u, timeout)
	if err != nil {
		return "", err
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return "", fmt.Errorf("%w: %s: the reply is not a gzipped pprof profile", ErrProfile, u)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", ErrProfile, err)
	}
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("%w: %v", ErrProfile, err)
	}
	return path, nil
}

// get fetches u within timeout and returns the body of a 200 reply.
func (p *profiler) get(ctx context.Context, u string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProfile, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProfile, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrProfile, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(data[:min(len(data), 200)]))
		return nil, fmt.Errorf("%w: %s: %s: %s", ErrProfile, u, resp.Status, msg)
	}
	if len(data) > maxProfileBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrProfile, u, maxProfileBytes)
	}
	return data, nil
}
