package ops

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/zkserverd/zkserverd/jute"
)

// scrape reads /metrics and returns every sample by its series text
// (`name` or `name{labels}`).
func scrape(t *testing.T, s *testServer) map[string]float64 {
	t.Helper()
	status, ctype, body := httpDo(t, "GET", "http://"+s.MetricsAddr().String()+"/metrics")
	if status != 200 || !strings.HasPrefix(ctype, "text/plain") {
		t.Fatalf("GET /metrics: %d %q", status, ctype)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsNames checks that /metrics has ZooKeeper's names, the latency
// summaries with their quantiles, and the runtime collectors.
func TestMetricsNames(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	m := scrape(t, s)
	var want []string
	for _, g := range s.gauges() {
		want = append(want, g.name)
	}
	for _, q := range []string{"0.5", "0.9", "0.99"} {
		want = append(want, `readlatency{quantile="`+q+`"}`, `updatelatency{quantile="`+q+`"}`)
	}
	want = append(want, "readlatency_count", "readlatency_sum", "updatelatency_count", "updatelatency_sum",
		`fsynctime{quantile="0.5"}`, "fsynctime_count", "fsynctime_sum",
		"go_goroutines", "go_memstats_heap_alloc_bytes", "process_open_fds", "process_resident_memory_bytes",
		connectionPanicsMetric, digestMismatchesMetric, memoryRefusedWritesMetric)
	for _, name := range want {
		if _, ok := m[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if m["znode_count"] != float64(s.nodeCount()) || m["num_alive_connections"] != 0 {
		t.Errorf("znode_count %v (want %d), num_alive_connections %v", m["znode_count"], s.nodeCount(), m["num_alive_connections"])
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/", 404}, {"GET", "/metricsx", 404}, {"POST", "/metrics", 405}, {"HEAD", "/metrics", 200}} {
		if status, _, _ := httpDo(t, c.method, "http://"+s.MetricsAddr().String()+c.path); status != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, status, c.status)
		}
	}
}

// TestMetricsFollowOperations checks that the gauges move with what
// clients do.
func TestMetricsFollowOperations(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	before := scrape(t, s)
	c := opsClient(t, s)
	for i := range 3 {
		if _, err := c.Create("/node"+strconv.Itoa(i), []byte("12345"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.GetW("/node0"); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, s)
	deltas := []struct {
		name string
		want float64
	}{
		{"znode_count", 4},
		{"ephemerals_count", 1},
		{"watch_count", 1},
		{"global_sessions", 1},
		{"num_alive_connections", 1},
		{"approximate_data_size", 3*(6+5) + 4},
	}
	for _, d := range deltas {
		if got := after[d.name] - before[d.name]; got != d.want {
			t.Errorf("%s moved by %v, want %v", d.name, got, d.want)
		}
	}
	if after["packets_received"] < before["packets_received"]+5 || after["packets_sent"] < before["packets_sent"]+5 {
		t.Errorf("packets: received %v -> %v, sent %v -> %v", before["packets_received"], after["packets_received"],
			before["packets_sent"], after["packets_sent"])
	}
	if after["uptime"] < before["uptime"] {
		t.Errorf("uptime went back: %v -> %v", before["uptime"], after["uptime"])
	}
}

// TestObserveRequest checks the split of latencies between readlatency and
// updatelatency, and fsynctime's unit.
func TestObserveRequest(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	before := scrape(t, s)
	s.ObserveRequest(jute.OpGetData, 2*time.Millisecond)
	s.ObserveRequest(jute.OpPing, time.Millisecond)
	s.ObserveRequest(jute.OpCreate, 7*time.Millisecond)
	s.ObserveRequest(jute.OpCloseSession, 500*time.Microsecond)
	s.ObserveRequest(jute.OpAuth, time.Second)
	s.ObserveLogSync(3 * time.Millisecond)
	after := scrape(t, s)
	cases := []struct {
		name string
		want float64
	}{
		{"readlatency_count", 2}, {"readlatency_sum", 3},
		{"updatelatency_count", 2}, {"updatelatency_sum", 7.5},
		{"fsynctime_count", 1}, {"fsynctime_sum", 3},
	}
	for _, c := range cases {
		if got := after[c.name] - before[c.name]; got != c.want {
			t.Errorf("%s moved by %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFsyncTimeObservesLogFsyncs: with forceSync, a write's log fsyncs
// reach fsynctime (/metrics and mntr); server_stats'
// fsync_threshold_exceed_count is the log's count.
func TestFsyncTimeObservesLogFsyncs(t *testing.T) {
	cfg := opsConfig(t)
	cfg.ForceSync = true
	s := startOpsServer(t, testOptions{Config: cfg})
	c := opsClient(t, s)
	before := scrape(t, s)
	for i := range 3 {
		if _, err := c.Create("/synced"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	after := scrape(t, s)
	if got := after["fsynctime_count"] - before["fsynctime_count"]; got < 3 {
		t.Errorf("fsynctime_count moved by %v after 3 synced writes, want at least 3", got)
	}
	mntr := decodeJSON(t, "monitor", adminGet(t, s, "monitor"))
	if got, ok := mntr["cnt_fsynctime"].(json.Number); !ok || mustInt(t, got) < 3 {
		t.Errorf("mntr cnt_fsynctime = %v after 3 synced writes, want at least 3", mntr["cnt_fsynctime"])
	}
	stats := decodeJSON(t, "server_stats", adminGet(t, s, "server_stats"))["server_stats"].(map[string]any)
	if got, want := stats["fsync_threshold_exceed_count"], jsonNumberOf(int(s.Replica().SlowLogSyncs())); got != want {
		t.Errorf("fsync_threshold_exceed_count = %v, want %v", got, want)
	}
}

// TestTwoServersInOneProcess: each server has its own registry, ports and
// values.
func TestTwoServersInOneProcess(t *testing.T) {
	a := startOpsServer(t, testOptions{Config: opsConfig(t)})
	b := startOpsServer(t, testOptions{Config: opsConfig(t)})
	if a.MetricsAddr().String() == b.MetricsAddr().String() || a.AdminAddr().String() == b.AdminAddr().String() {
		t.Fatalf("shared endpoints: %v %v / %v %v", a.MetricsAddr(), b.MetricsAddr(), a.AdminAddr(), b.AdminAddr())
	}
	c := opsClient(t, a)
	for i := range 4 {
		if _, err := c.Create("/a"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	ma, mb := scrape(t, a), scrape(t, b)
	if ma["znode_count"]-mb["znode_count"] != 4 || ma["global_sessions"] != 1 || mb["global_sessions"] != 0 {
		t.Errorf("a: znode_count %v sessions %v; b: znode_count %v sessions %v",
			ma["znode_count"], ma["global_sessions"], mb["znode_count"], mb["global_sessions"])
	}
	for _, s := range []*testServer{a, b} {
		got := decodeJSON(t, "conf", adminGet(t, s, "configuration"))["client_port"]
		if got != jsonNumberOf(portOf(s.Addr())) {
			t.Errorf("admin of %v reports client_port %v", s.Addr(), got)
		}
	}
}

// TestMetricsProviderChoice: /metrics is served only for the Prometheus
// provider, but the registry is filled either way.
func TestMetricsProviderChoice(t *testing.T) {
	cfg := opsConfig(t)
	cfg.MetricsProviderClassName = "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
	cfg.Extra["metricsProvider.exportJvmInfo"] = "false"
	s := startOpsServer(t, testOptions{Config: cfg})
	if s.MetricsAddr() != nil {
		t.Errorf("/metrics served at %v with the default provider", s.MetricsAddr())
	}
	names := gatheredNames(t, s.Gatherer())
	if !names["znode_count"] || !names["readlatency"] || names["go_goroutines"] {
		t.Errorf("gathered %v: want znode_count and readlatency, no Go collector (exportJvmInfo=false)", names)
	}
}

func gatheredNames(t *testing.T, g prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	names := make(map[string]bool)
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}

// TestCallerRegistry: metrics go to the caller's registry, runtime
// collectors it already has are kept, and Close unregisters so a new
// server can use the same registry.
func TestCallerRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	for round := range 2 {
		cfg := opsConfig(t)
		s, err := newTestServer(testOptions{Config: cfg, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(t.Context()); err != nil {
			s.Close()
			t.Fatalf("round %d: start: %v", round, err)
		}
		if names := gatheredNames(t, reg); !names["znode_count"] || !names["go_goroutines"] || !names["process_open_fds"] {
			t.Errorf("round %d: registry has %v", round, names)
		}
		if m := scrape(t, s); m["znode_count"] != float64(s.nodeCount()) {
			t.Errorf("round %d: /metrics does not serve the caller's registry", round)
		}
		s.Close()
		if names := gatheredNames(t, reg); names["znode_count"] || names["process_open_fds"] || !names["go_goroutines"] {
			t.Errorf("round %d: after Close the registry has %v", round, names)
		}
	}
}

// TestMetricsPortBusy: a /metrics port that cannot be bound fails Start,
// as ZooKeeper fails to start.
func TestMetricsPortBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := opsConfig(t)
	cfg.MetricsHTTPPort = portOf(ln.Addr())
	s, err := newTestServer(testOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "metrics endpoint") {
		t.Errorf("Start on a busy metrics port: %v", err)
	}
}

func mustInt(t *testing.T, n json.Number) int64 {
	t.Helper()
	v, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func jsonNumberOf(n int) any { return json.Number(strconv.Itoa(n)) }

// TestDocsUseExportedMetrics checks that every series the alert rules and
// the Grafana dashboard select is one /metrics serves.
func TestDocsUseExportedMetrics(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	served := make(map[string]bool)
	for series := range scrape(t, s) {
		name, _, _ := strings.Cut(series, "{")
		served[name] = true
	}
	served["up"] = true // added by Prometheus itself
	var exprs []string
	rules, err := os.ReadFile("../../docs/prometheus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:"); ok {
			exprs = append(exprs, e)
		}
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	selector := regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	checked := 0
	for _, e := range exprs {
		for _, m := range selector.FindAllStringSubmatch(e, -1) {
			checked++
			if !served[m[1]] {
				t.Errorf("%q selects %s, which /metrics does not serve", e, m[1])
			}
		}
	}
	if len(exprs) < 20 || checked < len(exprs) {
		t.Errorf("checked %d selectors in %d expressions", checked, len(exprs))
	}
}

// TestNoGatherer: /metrics cannot be served from a Registerer that cannot
// be gathered.
func TestNoGatherer(t *testing.T) {
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"member": "1"}, prometheus.NewRegistry())
	s, err := newTestServer(testOptions{Config: opsConfig(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(t.Context()); !errors.Is(err, ErrNoGatherer) {
		t.Errorf("Start = %v, want ErrNoGatherer", err)
	}
}
