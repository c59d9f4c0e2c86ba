package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNormalizePprofURL(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "http://127.0.0.1:6060", want: "http://127.0.0.1:6060"},
		{in: "127.0.0.1:6060", want: "http://127.0.0.1:6060"},
		{in: "http://127.0.0.1:6060/", want: "http://127.0.0.1:6060"},
		{in: "http://127.0.0.1:6060/debug/pprof/", want: "http://127.0.0.1:6060"},
		{in: "https://h:1/prefix/debug/pprof?x=1", want: "https://h:1/prefix"},
		{in: "ftp://h:1", bad: true},
		{in: "http://", bad: true},
		{in: "http://bad host:1", bad: true},
	}
	for _, tt := range tests {
		got, err := NormalizePprofURL(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: accepted as %q", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestProfileNames(t *testing.T) {
	tests := []struct {
		name, label     string
		member, members int
		want            string
	}{
		{"get", "zkserverd", 1, 1, "get-zkserverd"},
		{"latency-get", "", 1, 1, "latency-get"},
		{"multi", "zkserverd", 2, 3, "multi-zkserverd.2"},
		{"a/b c", "x:y", 1, 1, "a_b_c-x_y"},
	}
	for _, tt := range tests {
		if got := profileBase(tt.name, tt.label, tt.member, tt.members); got != tt.want {
			t.Errorf("profileBase(%q, %q, %d, %d) = %q, want %q", tt.name, tt.label, tt.member, tt.members, got, tt.want)
		}
	}
	for d, want := range map[time.Duration]int{0: 1, 300 * time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, 10 * time.Second: 10} {
		if got := profileSeconds(d); got != want {
			t.Errorf("profileSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// fakePprof serves fixed bodies at /debug/pprof/profile and /heap and
// records the requests. status, when set, replaces a reply by that code.
type fakePprof struct {
	cpu, heap []byte
	status    map[string]int // path -> HTTP status

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	path, query string
	at          time.Time
}

func (f *fakePprof) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{r.URL.Path, r.URL.RawQuery, time.Now()})
	f.mu.Unlock()
	if code := f.status[r.URL.Path]; code != 0 {
		http.Error(w, "profiling is off", code)
		return
	}
	switch r.URL.Path {
	case "/debug/pprof/profile":
		w.Write(f.cpu)
	case "/debug/pprof/heap":
		w.Write(f.heap)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakePprof) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// gzipLike returns bytes that start with the gzip magic, as pprof's do.
func gzipLike(s string) []byte { return append([]byte{0x1f, 0x8b}, s...) }

func TestRunSavesProfiles(t *testing.T) {
	fake := &fakePprof{cpu: gzipLike("cpu profile"), heap: gzipLike("heap profile")}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "profiles") // created by the run
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cfg := shortConfig(startServer(t), "get")
	cfg.Name, cfg.PprofURLs, cfg.ProfileDir = "get", []string{srv.URL + "/debug/pprof/"}, dir
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	if len(res.Profiles) != 1 {
		t.Fatalf("profiles = %+v", res.Profiles)
	}
	p := res.Profiles[0]
	want := ServerProfiles{URL: srv.URL, CPU: filepath.Join(dir, "get-inprocess.cpu.pprof"), CPUSeconds: 1,
		Heap: filepath.Join(dir, "get-inprocess.heap.pprof")}
	if p.URL != want.URL || p.CPU != want.CPU || p.CPUSeconds != want.CPUSeconds || p.Heap != want.Heap || len(p.Warnings) != 0 {
		t.Fatalf("profiles[0] = %+v, want %+v", p, want)
	}
	for file, body := range map[string][]byte{p.CPU: fake.cpu, p.Heap: fake.heap} {
		if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s: %q, %v; want %q", file, got, err, body)
		}
	}
	reqs := fake.seen()
	if len(reqs) != 2 || reqs[0].path != "/debug/pprof/profile" || reqs[0].query != "seconds=1" ||
		reqs[1].path != "/debug/pprof/heap" || reqs[1].query != "gc=1" {
		t.Fatalf("requests = %+v", reqs)
	}
	// The CPU profile starts with the measured period, after the warm-up.
	if start := res.Started.Add(cfg.Warmup); reqs[0].at.Before(start) {
		t.Errorf("cpu profile requested %v before measuring started", start.Sub(reqs[0].at))
	}

	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Profiles []map[string]any `json:"profiles"`
	}
	if err := json.Unmarshal(data, &back); err != nil || len(back.Profiles) != 1 ||
		back.Profiles[0]["cpu"] != want.CPU || back.Profiles[0]["heap"] != want.Heap || back.Profiles[0]["cpu_seconds"] != 1.0 {
		t.Fatalf("JSON profiles = %+v (%v) in %s", back.Profiles, err, data)
	}
	var text strings.Builder
	if err := FormatText(&text, res); err != nil || !strings.Contains(text.String(), want.CPU) {
		t.Errorf("text lacks the profile file:\n%s", text.String())
	}
}

// TestProfileFailuresAreWarnings runs the profiler directly: each failed
// fetch leaves a warning and no file, and never an error.
func TestProfileFailuresAreWarnings(t *testing.T) {
	refusing := &fakePprof{cpu: gzipLike("x"), heap: gzipLike("y"), status: map[string]int{"/debug/pprof/profile": 500}}
	notPprof := &fakePprof{cpu: []byte("<html>"), heap: []byte("<html>")}
	good := &fakePprof{cpu: gzipLike("cpu"), heap: gzipLike("heap")}
	var urls []string
	for _, h := range []http.Handler{refusing, notPprof, good} {
		srv := httptest.NewServer(h)
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	urls = append(urls, closed.URL)

	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Name, cfg.Label, cfg.ProfileDir, cfg.Duration = "set", "zk", dir, 2*time.Second
	cfg.PprofURLs = urls
	p := newProfiler(cfg)
	ctx := context.Background()
	p.startCPU(ctx)
	p.startCPU(ctx) // a second start is ignored
	got := p.finish(ctx)

	wantWarnings := []int{1, 2, 0, 2}
	wantCPU := []string{"", "", filepath.Join(dir, "set-zk.3.cpu.pprof"), ""}
	wantHeap := []string{filepath.Join(dir, "set-zk.1.heap.pprof"), "", filepath.Join(dir, "set-zk.3.heap.pprof"), ""}
	if len(got) != len(urls) {
		t.Fatalf("%d results for %d servers", len(got), len(urls))
	}
	for i, g := range got {
		if g.URL != urls[i] || len(g.Warnings) != wantWarnings[i] || g.CPU != wantCPU[i] || g.Heap != wantHeap[i] || g.CPUSeconds != 2 {
			t.Errorf("server %d: %+v; want %d warnings, cpu %q, heap %q", i+1, g, wantWarnings[i], wantCPU[i], wantHeap[i])
		}
	}
	if !strings.Contains(strings.Join(got[0].Warnings, " "), "500") {
		t.Errorf("warning does not give the status: %v", got[0].Warnings)
	}
	if !strings.Contains(strings.Join(got[1].Warnings, " "), "not a gzipped pprof profile") {
		t.Errorf("warning does not say the body is wrong: %v", got[1].Warnings)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 3 {
		t.Errorf("files written: %v, want the 3 successful fetches", files)
	}
	if len(good.seen()) != 2 {
		t.Errorf("good server saw %+v, want one CPU and one heap request", good.seen())
	}
}

func TestNoProfilerWithoutURLs(t *testing.T) {
	p := newProfiler(DefaultConfig())
	p.startCPU(context.Background()) // nil-safe
	if got := p.finish(context.Background()); got != nil {
		t.Fatalf("finish without URLs = %+v", got)
	}
	cfg := DefaultConfig()
	cfg.PprofURLs = []string{"ftp://x"}
	if err := cfg.Validate(); err == nil {
		t.Fatal("a non-HTTP pprof URL was accepted")
	}
}
