package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/test/ports"
	"github.com/zkserverd/zkserverd/txnlog"
)

// opsConfig is testutil's standalone loopback configuration in a fresh
// directory, with /metrics on a port the system picks too, and
// forceSync=no (a test that observes fsyncs turns it on).
func opsConfig(t *testing.T) conf.Config {
	t.Helper()
	cfg := testutil.Config(t.TempDir())
	cfg.ForceSync = false
	cfg.MetricsProviderClassName = PrometheusMetricsProvider
	cfg.MetricsHTTPPort = 0
	cfg.Extra = map[string]string{metricsHostKey: "127.0.0.1"}
	return cfg
}

// testOptions configures a test server: the server's options and its
// operator surfaces'.
type testOptions struct {
	Config     conf.Config
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
}

// testServer is a server and the operator surfaces it was given.
type testServer struct {
	*server.Server
	*Surfaces
}

// newTestServer builds a server with operator surfaces; it does not start
// it.
func newTestServer(opts testOptions) (*testServer, error) {
	o := New(Options{Registerer: opts.Registerer, Gatherer: opts.Gatherer})
	s, err := server.New(server.Options{Config: opts.Config, Logger: opts.Logger, Operator: o})
	if err != nil {
		return nil, err
	}
	return &testServer{Server: s, Surfaces: o}, nil
}

// Start starts the server, which starts the surfaces.
func (s *testServer) Start(ctx context.Context) error { return s.Server.Start(ctx) }

// startOpsServer starts a server and closes it when the test ends.
func startOpsServer(t *testing.T, opts testOptions) *testServer {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testutil.Logger(t, slog.LevelWarn)
	}
	s, err := newTestServer(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	testutil.Start(t, s)
	return s
}

// opsClient opens a go-zookeeper session to s.
func opsClient(t *testing.T, s *testServer) *zk.Conn {
	t.Helper()
	c, _ := testutil.Connect(t, s.Addr().String(), 10*time.Second)
	return c
}

// notServingState is a server's state as it shows while the server does
// not serve (no quorum, not caught up).
type notServingState struct{ State }

func (notServingState) Serving() bool { return false }

// httpDo sends a request and returns status, content type and body.
func httpDo(t *testing.T, method, url string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// adminGet runs one command and returns its raw body, failing unless the
// reply is 200 application/json.
func adminGet(t *testing.T, s *testServer, command string) string {
	t.Helper()
	status, ctype, body := httpDo(t, http.MethodGet, "http://"+s.AdminAddr().String()+"/commands/"+command)
	if status != http.StatusOK || ctype != "application/json" {
		t.Fatalf("GET %s: %d %q", command, status, ctype)
	}
	return body
}

// decodeJSON parses a reply, keeping numbers as json.Number.
func decodeJSON(t *testing.T, name, body string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: not a JSON object: %v\n%s", name, err, body)
	}
	return v
}

func readSample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "admin", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mapValued names objects whose keys are data (session ids, paths,
// times, server ids): their entries are compared with the sample's first
// entry instead of by key.
var mapValued = map[string]bool{
	"expiry_time_to_session_ids": true, "session_id_to_ephemeral_paths": true,
	"session_id_to_watched_paths": true, "path_to_session_ids": true, "current_config": true,
}

// shapeDiff compares the JSON kinds of got and want recursively: the same
// keys in objects (see mapValued), the first elements of arrays, and the
// kind of scalars. nullable keys may be null where the sample has a value.
func shapeDiff(path string, got, want any, nullable map[string]bool) []string {
	key := path[strings.LastIndex(path, ".")+1:]
	if got == nil && nullable[key] {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", path, got)}
		}
		if mapValued[key] {
			var diffs []string
			for gk, gv := range g {
				for _, wv := range w {
					diffs = append(diffs, shapeDiff(path+"."+gk, gv, wv, nullable)...)
					break
				}
			}
			return diffs
		}
		var diffs []string
		for k := range w {
			if _, ok := g[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: missing key %q", path, k))
			}
		}
		for k, gv := range g {
			wv, ok := w[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: extra key %q", path, k))
				continue
			}
			diffs = append(diffs, shapeDiff(path+"."+k, gv, wv, nullable)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", path, got)}
		}
		if len(g) > 0 && len(w) > 0 {
			return shapeDiff(path+"[0]", g[0], w[0], nullable)
		}
		return nil
	default:
		if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
			return []string{fmt.Sprintf("%s: %T %v, want %T like %v", path, got, got, want, want)}
		}
		return nil
	}
}

// populate gives the server a session with an ephemeral node, data and
// child watches, so that every command has something to show.
func populate(t *testing.T, c *zk.Conn) {
	t.Helper()
	if _, err := c.Create("/app", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/app/lock", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.GetW("/app"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ExistsW("/app/x"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ChildrenW("/app"); err != nil {
		t.Fatal(err)
	}
}

// TestAdminCommandsMatchSamples reads every command and compares it with
// the reply captured from ZooKeeper 3.8.0: byte for byte where the reply
// does not depend on the run, else key by key and kind by kind.
func TestAdminCommandsMatchSamples(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	c := opsClient(t, s)
	populate(t, c)

	exact := []struct{ command, sample string }{
		{"ruok", "ruok.standalone.json"},
		{"is_read_only", "is_read_only.standalone.json"},
		{"leader", "leader.standalone.json"},
		{"observers", "observers.standalone.json"},
		{"voting_view", "voting_view.standalone.json"},
		{"zabstate", "zabstate.standalone.json"},
		{"get_trace_mask", "get_trace_mask.leader.json"},
		{"hash", "hash.leader.json"},
		{"set_trace_mask", "set_trace_mask.leader.json"},
		{"connection_stat_reset", "connection_stat_reset.leader.json"},
		{"observer_connection_stat_reset", "observer_connection_stat_reset.leader.json"},
		{"stat_reset", "stat_reset.leader.json"},
	}
	for _, e := range exact {
		if got, want := adminGet(t, s, e.command), readSample(t, e.sample); got != want {
			t.Errorf("%s:\n%s\nwant (%s):\n%s", e.command, got, e.sample, want)
		}
	}

	shaped := []struct{ command, sample string }{
		{"configuration", "configuration.standalone.json"},
		{"connections", "connections.standalone.json"},
		{"dirs", "dirs.leader.json"},
		{"dump", "dump.standalone.json"},
		{"environment", "environment.standalone.json"},
		{"initial_configuration", "initial_configuration.standalone.json"},
		{"last_snapshot", "last_snapshot.standalone.json"},
		{"server_stats", "server_stats.standalone.json"},
		{"stats", "stats.standalone.json"},
		{"watch_summary", "watch_summary.standalone.json"},
		{"watches", "watches.standalone.json"},
		{"watches_by_path", "watches_by_path.standalone.json"},
	}
	// zkserverd does not keep the zoo.cfg text it was configured from.
	nullable := map[string]bool{"initial_configuration": true}
	for _, e := range shaped {
		body := adminGet(t, s, e.command)
		got := decodeJSON(t, e.command, body)
		want := decodeJSON(t, e.sample, readSample(t, e.sample))
		for _, d := range shapeDiff(e.command, got, want, nullable) {
			t.Errorf("%s", d)
		}
		if got["command"] != e.command || got["error"] != nil {
			t.Errorf("%s: command %v error %v", e.command, got["command"], got["error"])
		}
		if strings.HasSuffix(body, "\n") || !strings.Contains(body, "\n  \"command\" : ") {
			t.Errorf("%s: not printed as Jackson prints:\n%s", e.command, body)
		}
	}
}

// TestAdminMonitorAndProperties checks the two commands whose key sets
// differ from the samples by design: monitor has mntr's keys (ZooKeeper's
// provider adds hundreds of metric keys), system_properties the properties
// that exist here.
func TestAdminMonitorAndProperties(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	got := decodeJSON(t, "monitor", adminGet(t, s, "monitor"))
	want := decodeJSON(t, "sample", readSample(t, "monitor.standalone.json"))
	var mntr []string
	for _, kv := range s.monitorValues() {
		mntr = append(mntr, kv.key)
	}
	firstBlock := strings.Fields(`version server_state ephemerals_count num_alive_connections avg_latency
		outstanding_requests znode_count global_sessions non_mtls_remote_conn_count last_client_response_size
		packets_sent packets_received max_client_response_size connection_drop_probability watch_count
		auth_failed_count min_latency max_file_descriptor_count approximate_data_size
		open_file_descriptor_count local_sessions uptime max_latency outstanding_tls_handshake
		min_client_response_size non_mtls_local_conn_count`)
	for _, k := range firstBlock {
		if _, ok := got[k]; !ok {
			t.Errorf("monitor: missing %q", k)
		}
	}
	for _, k := range mntr {
		if wv, ok := want[k]; ok {
			for _, d := range shapeDiff("monitor."+k, got[k], wv, nil) {
				t.Errorf("%s", d)
			}
		} else if _, ok := got[k].(json.Number); !ok {
			t.Errorf("monitor: zkserverd key %q is %T, want a number", k, got[k])
		}
	}
	if len(got) != len(mntr)+2 {
		t.Errorf("monitor has %d keys, mntr %d (+command, error)", len(got), len(mntr))
	}
	if got["znode_count"] != json.Number(strconv.Itoa(s.nodeCount())) || got["server_state"] != "standalone" {
		t.Errorf("monitor values: znode_count %v server_state %v", got["znode_count"], got["server_state"])
	}

	props := decodeJSON(t, "system_properties", adminGet(t, s, "system_properties"))
	sample := decodeJSON(t, "sample", readSample(t, "system_properties.standalone.json"))
	for _, k := range []string{"file.encoding", "file.separator", "line.separator", "path.separator",
		"java.version", "java.home", "os.name", "os.arch", "os.version", "user.dir", "user.home", "user.name",
		"zookeeper.admin.serverAddress", "zookeeper.admin.serverPort"} {
		if _, ok := sample[k]; !ok {
			t.Fatalf("test bug: %q is not in the sample", k)
		}
		if _, ok := props[k].(string); !ok {
			t.Errorf("system_properties: %q is %v, want a string", k, props[k])
		}
	}
	if props["zookeeper.admin.serverAddress"] != "127.0.0.1" {
		t.Errorf("zookeeper.admin.serverAddress = %v", props["zookeeper.admin.serverAddress"])
	}
}

// TestAdminValues checks that the JSON carries the server's own values.
func TestAdminValues(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	c := opsClient(t, s)
	populate(t, c)
	sid := json.Number(strconv.FormatInt(c.SessionID(), 10))

	cfg := decodeJSON(t, "configuration", adminGet(t, s, "conf"))
	if cfg["command"] != "configuration" || cfg["client_port"] != json.Number(strconv.Itoa(portOf(s.Addr()))) {
		t.Errorf("conf alias: %v", cfg)
	}
	conns := decodeJSON(t, "connections", adminGet(t, s, "cons"))["connections"].([]any)
	if len(conns) != 1 || conns[0].(map[string]any)["session_id"] != sid {
		t.Errorf("connections: %v, want one with session %v", conns, sid)
	}
	dump := decodeJSON(t, "dump", adminGet(t, s, "dump"))
	eph := dump["session_id_to_ephemeral_paths"].(map[string]any)
	if fmt.Sprint(eph[string(sid)]) != "[/app/lock]" {
		t.Errorf("dump ephemerals: %v", eph)
	}
	wchs := decodeJSON(t, "watch_summary", adminGet(t, s, "wchs"))
	conns2, paths, total := s.Watches().Summary()
	if wchs["num_connections"] != json.Number(strconv.Itoa(conns2)) || wchs["num_paths"] != json.Number(strconv.Itoa(paths)) ||
		wchs["num_total_watches"] != json.Number(strconv.Itoa(total)) || total != 2 {
		t.Errorf("watch_summary %v, registry %d/%d/%d", wchs, conns2, paths, total)
	}
	byPath := decodeJSON(t, "watches_by_path", adminGet(t, s, "wchp"))["path_to_session_ids"].(map[string]any)
	if fmt.Sprint(byPath["/app"]) != "["+string(sid)+"]" || fmt.Sprint(byPath["/app/x"]) != "["+string(sid)+"]" {
		t.Errorf("watches_by_path: %v", byPath)
	}
	watches := decodeJSON(t, "watches", adminGet(t, s, "wchc"))["session_id_to_watched_paths"].(map[string]any)
	if fmt.Sprint(watches[string(sid)]) != "[/app /app/x]" {
		t.Errorf("watches: %v", watches)
	}
	stats := decodeJSON(t, "srvr", adminGet(t, s, "srvr"))
	inner := stats["server_stats"].(map[string]any)
	before, _ := inner["packets_received"].(json.Number).Int64()
	if before < 5 || stats["node_count"] != json.Number(strconv.Itoa(s.nodeCount())) {
		t.Errorf("server_stats: packets_received %d node_count %v", before, stats["node_count"])
	}
	adminGet(t, s, "srst")
	after, _ := decodeJSON(t, "srvr", adminGet(t, s, "srvr"))["server_stats"].(map[string]any)["packets_received"].(json.Number).Int64()
	if after >= before {
		t.Errorf("stat_reset: packets_received %d then %d", before, after)
	}
	mask := decodeJSON(t, "stmk", adminGet(t, s, "stmk?traceMask=1234"))
	if mask["tracemask"] != json.Number("1234") || mask["command"] != "set_trace_mask" {
		t.Errorf("set_trace_mask: %v", mask)
	}
	bad := decodeJSON(t, "stmk", adminGet(t, s, "set_trace_mask?traceMask=x"))
	if bad["error"] != "setTraceMask requires long traceMask argument, got x" {
		t.Errorf("set_trace_mask bad argument: %v", bad)
	}
}

// TestAdminHTTP checks routing, methods, the index and errors.
func TestAdminHTTP(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	base := "http://" + s.AdminAddr().String()
	cases := []struct {
		name, method, path string
		status             int
		ctype, body        string
	}{
		{"index", "GET", "/commands", 200, "text/html;charset=utf-8", readSample(t, "commands.index.html")},
		{"index slash", "GET", "/commands/", 200, "text/html;charset=utf-8", readSample(t, "commands.index.html")},
		{"unknown", "GET", "/commands/nope", 200, "application/json",
			"{\n  \"command\" : \"nope\",\n  \"error\" : \"Unknown command: nope\"\n}"},
		{"alias", "GET", "/commands/isro", 200, "application/json", readSample(t, "is_read_only.standalone.json")},
		{"post", "POST", "/commands/ruok", 405, "", ""},
		{"root", "GET", "/", 404, "", ""},
		{"outside", "GET", "/commandsx/ruok", 404, "", ""},
	}
	for _, c := range cases {
		status, ctype, body := httpDo(t, c.method, base+c.path)
		if status != c.status || (c.ctype != "" && ctype != c.ctype) || (c.body != "" && body != c.body) {
			t.Errorf("%s: %d %q\n%s\nwant %d %q\n%s", c.name, status, ctype, body, c.status, c.ctype, c.body)
		}
	}

	// The same server's commands as they run while it does not serve.
	idle := New(Options{})
	idle.st, idle.cfg, idle.log = notServingState{s.Server}, s.Config(), s.Logger()
	h := newAdminHandler(idle)
	want := "{\n  \"command\" : \"ruok\",\n  \"error\" : \"This ZooKeeper instance is not currently serving requests\"\n}"
	if got := h.run("ruok", nil); got != want {
		t.Errorf("ruok while not serving:\n%s", got)
	}
	if env := decodeJSON(t, "envi", h.run("envi", nil)); env["error"] != nil || env["command"] != "environment" {
		t.Errorf("environment while not serving: %v", env)
	}
}

// TestAdminCommandURL serves the commands under a configured prefix.
func TestAdminCommandURL(t *testing.T) {
	cfg := opsConfig(t)
	cfg.AdminCommandURL = "/zk/cmds/"
	s := startOpsServer(t, testOptions{Config: cfg})
	base := "http://" + s.AdminAddr().String()
	status, _, body := httpDo(t, "GET", base+"/zk/cmds")
	if status != 200 || !strings.HasPrefix(body, "<a href=\"/zk/cmds/configuration\">configuration</a>\n<br/>\n") {
		t.Errorf("index: %d\n%s", status, body)
	}
	if status, _, _ := httpDo(t, "GET", base+"/commands/ruok"); status != 404 {
		t.Errorf("default prefix still served: %d", status)
	}
	if got := getBody(t, base+"/zk/cmds/ruok"); got != readSample(t, "ruok.standalone.json") {
		t.Errorf("ruok under prefix: %s", got)
	}
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	_, _, body := httpDo(t, "GET", url)
	return body
}

// TestAdminDisabledAndBusy: no AdminServer when disabled; a busy port is
// logged and the server still serves clients.
func TestAdminDisabledAndBusy(t *testing.T) {
	cfg := opsConfig(t)
	cfg.AdminEnableServer = false
	if s := startOpsServer(t, testOptions{Config: cfg}); s.AdminAddr() != nil {
		t.Errorf("AdminServer at %v although disabled", s.AdminAddr())
	}
	first := startOpsServer(t, testOptions{Config: opsConfig(t)})
	cfg = opsConfig(t)
	cfg.AdminServerPort = portOf(first.AdminAddr())
	second := startOpsServer(t, testOptions{Config: cfg})
	if second.AdminAddr() != nil {
		t.Errorf("second AdminServer on a busy port: %v", second.AdminAddr())
	}
	opsClient(t, second)
}

// TestAdminLastSnapshot reads the zxid of a snapshot taken on disk.
func TestAdminLastSnapshot(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	c := opsClient(t, s)
	for i := range 3 {
		if _, err := c.Create("/n"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	zxid := s.Replica().LastZxid()
	if err := s.Replica().(*replication.Node).Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	got := decodeJSON(t, "lsnp", adminGet(t, s, "lsnp"))
	if got["zxid"] != strconv.FormatInt(zxid, 16) || zxid == 0 {
		t.Errorf("last_snapshot zxid %v, want %x", got["zxid"], zxid)
	}
	ts, _ := got["timestamp"].(json.Number).Int64()
	if d := time.Since(time.Unix(ts, 0)); d < -2*time.Second || d > time.Minute {
		t.Errorf("last_snapshot timestamp %d is %v ago", ts, d)
	}
}

// TestAdminLastSnapshotSkipsDamaged: when the newest snapshot is set aside
// as damaged (renamed with ".damaged", as a member does at start when it
// fails its checks), last_snapshot names the one before it.
func TestAdminLastSnapshotSkipsDamaged(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	c := opsClient(t, s)
	node := s.Replica().(*replication.Node)
	var zxids []string
	for i := range 2 {
		if _, err := c.Create("/d"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		zxids = append(zxids, strconv.FormatInt(node.LastZxid(), 16))
		if err := node.Snapshot(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	lsnp := func() any { return decodeJSON(t, "lsnp", adminGet(t, s, "lsnp"))["zxid"] }
	if got := lsnp(); got != zxids[1] {
		t.Fatalf("last_snapshot zxid %v, want the newest snapshot's %s", got, zxids[1])
	}
	dataDir, _ := s.DataDirs()
	dirs, err := replication.SnapshotDirs(dataDir)
	if err != nil || len(dirs) != 2 {
		t.Fatalf("snapshot directories %v, %v; want two", dirs, err)
	}
	if err := os.Rename(dirs[0].Path, dirs[0].Path+".damaged"); err != nil {
		t.Fatal(err)
	}
	if got := lsnp(); got != zxids[0] {
		t.Fatalf("last_snapshot zxid %v with the newest snapshot damaged, want the one before's %s", got, zxids[0])
	}
}

// TestLastSnapshotPicksNewest: the newest complete snapshot, never an
// unfinished one, one set aside as damaged (even when newest) or one whose
// name carries other text.
func TestLastSnapshotPicksNewest(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, meta bool, header []byte) {
		d := filepath.Join(dir, "raft", "snapshots", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if meta {
			os.WriteFile(filepath.Join(d, "meta.json"), []byte("{}"), 0o644)
		}
		os.WriteFile(filepath.Join(d, "state.bin"), header, 0o644)
	}
	header := func(zxid uint64) []byte {
		h, err := txnlog.SnapshotHead(txnlog.SnapshotHeader{LastZxid: int64(zxid)}, session.NewTable())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if _, _, ok := lastSnapshot(dir); ok {
		t.Fatal("found a snapshot in an empty directory")
	}
	write("2-10-1700000000000", true, header(0x200000005))
	write("2-9-1700000009000", true, header(0x200000004))
	write("3-11-1700000001000.tmp", true, header(0x300000001))
	write("3-12-1700000002000", false, header(0x300000002))
	write("5-20-1700000004000.damaged", true, header(0x500000001))
	write("5-21-1700000005000x", true, header(0x500000002))
	write("5-22-1700000006000-old", true, header(0x500000003))
	zxid, at, ok := lastSnapshot(dir)
	if !ok || zxid != 0x200000005 || at.UnixMilli() != 1700000000000 {
		t.Errorf("lastSnapshot = %x %v %v, want 200000005 at 1700000000000", zxid, at.UnixMilli(), ok)
	}
	write("4-1-1700000003000", true, []byte("not a snapshot header"))
	if _, _, ok := lastSnapshot(dir); ok {
		t.Error("accepted a snapshot with an unknown header")
	}
}

// TestEncodeJSONLikeJackson rebuilds captured replies and expects the
// same bytes.
func TestEncodeJSONLikeJackson(t *testing.T) {
	const sid = int64(72057672825569280)
	cases := []struct {
		sample string
		value  jsonObject
	}{
		{"connections.standalone.json", jsonObject{
			{"connections", jsonArray{jsonObject{
				{"remote_socket_address", "127.0.0.1:55100"}, {"interest_ops", 1}, {"outstanding_requests", 0},
				{"packets_received", int64(6)}, {"packets_sent", int64(6)}, {"session_id", sid},
				{"last_operation", "EXIS"}, {"established", int64(1795321044685)}, {"session_timeout", int32(30000)},
				{"last_cxid", int32(5)}, {"last_zxid", int64(3)}, {"last_response_time", int64(1202901)},
				{"last_latency", int64(1)}, {"min_latency", int64(0)}, {"avg_latency", int64(3)}, {"max_latency", int64(8)},
			}}},
			{"secure_connections", jsonArray{}}, {"command", "connections"}, {"error", nil},
		}},
		{"dump.standalone.json", jsonObject{
			{"expiry_time_to_session_ids", jsonObject{{"1234000", []int64{sid}}}},
			{"session_id_to_ephemeral_paths", jsonObject{{strconv.FormatInt(sid, 10), []string{"/app/lock"}}}},
			{"command", "dump"}, {"error", nil},
		}},
		{"watches.standalone.json", jsonObject{
			{"session_id_to_watched_paths", jsonObject{{strconv.FormatInt(sid, 10), []string{"/app", "/app/x"}}}},
			{"command", "watches"}, {"error", nil},
		}},
		{"initial_configuration.standalone.json", jsonObject{
			{"initial_configuration", "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=/tmp/zkspec/srv/a1/n1/data\nclientPort=20060\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=true\nadmin.serverPort=20111\nadmin.serverAddress=127.0.0.1\nmaxClientCnxns=0\nextendedTypesEnabled=true\nstandaloneEnabled=true\nreconfigEnabled=false\n\n"},
			{"command", "initial_configuration"}, {"error", nil},
		}},
		{"zabstate.leader.json", jsonObject{
			{"myid", int64(3)}, {"is_leader", true},
			{"quorum_address", multipleAddresses("127.0.0.1", 20203)},
			{"election_address", multipleAddresses("127.0.0.1", 20303)},
			{"client_address", "127.0.0.1:20102"}, {"voting", true}, {"last_zxid", "0x100000000"},
			{"zab_epoch", int64(1)}, {"zab_counter", int64(0)}, {"zabstate", "broadcast"},
			{"command", "zabstate"}, {"error", nil},
		}},
		{"server_stats.standalone.json", jsonObject{
			{"version", "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC"}, {"read_only", false},
			{"server_stats", jsonObject{
				{"packets_sent", int64(7)}, {"packets_received", int64(7)}, {"fsync_threshold_exceed_count", 0},
				{"client_response_stats", jsonObject{{"last_buffer_size", int64(16)}, {"min_buffer_size", int64(16)}, {"max_buffer_size", int64(91)}}},
				{"data_dir_size", int64(67109337)}, {"log_dir_size", int64(67109337)}, {"provider_null", false},
				{"server_state", "standalone"}, {"last_processed_zxid", int64(3)}, {"outstanding_requests", int64(0)},
				{"avg_latency", jsonDouble(3.5)}, {"max_latency", int64(8)}, {"min_latency", int64(1)},
				{"num_alive_client_connections", 1}, {"uptime", int64(1262)}, {"auth_failed_count", int64(0)},
				{"non_mtlsremote_conn_count", 0}, {"non_mtlslocal_conn_count", 0},
			}},
			{"client_response", jsonObject{{"last_buffer_size", int64(16)}, {"min_buffer_size", int64(16)}, {"max_buffer_size", int64(91)}}},
			{"node_count", 7}, {"command", "server_stats"}, {"error", nil},
		}},
	}
	for _, c := range cases {
		if got, want := encodeJSON(c.value), readSample(t, c.sample); got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.sample, got, want)
		}
	}
}

func TestWriteJSONString(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"a\nb\tc\rd\be\ff", `"a\nb\tc\rd\be\ff"`},
		{"\x01\x1f", `"\u0001\u001F"`},
		{"</script>&é", `"</script>&é"`},
	}
	for _, c := range cases {
		var b strings.Builder
		writeJSONString(&b, c.in)
		if b.String() != c.want {
			t.Errorf("%q: %s, want %s", c.in, b.String(), c.want)
		}
	}
}

func TestMonitorValue(t *testing.T) {
	cases := []struct {
		in   string
		want any
	}{
		{"42", jsonNumber("42")}, {"-1", jsonNumber("-1")}, {"0.0", jsonNumber("0.0")}, {"3.5455", jsonNumber("3.5455")},
		{"standalone", "standalone"}, {"3.8.0-x, built on y", "3.8.0-x, built on y"}, {"0x10", "0x10"},
		{"NaN", "NaN"}, {"", ""},
	}
	for _, c := range cases {
		if got := monitorValue(c.in); got != c.want {
			t.Errorf("monitorValue(%q) = %#v, want %#v", c.in, got, c.want)
		}
	}
}

// TestAdminIndexListsEveryCommand ties the command table to the sample's
// index (and so to ZooKeeper 3.8's command set).
func TestAdminIndexListsEveryCommand(t *testing.T) {
	var names []string
	for _, c := range adminCommands() {
		names = append(names, c.names[0])
	}
	var fromSample []string
	for _, line := range strings.Split(readSample(t, "commands.index.html"), "\n") {
		if name, ok := strings.CutPrefix(line, "<a href=\"/commands/"); ok {
			fromSample = append(fromSample, name[:strings.IndexByte(name, '"')])
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, fromSample) {
		t.Errorf("commands %v\nsample   %v", names, fromSample)
	}
}

// TestAdminEnsembleMatchesSamples runs a three-member ensemble in process
// and compares the leader's replies with the ones captured from a
// ZooKeeper 3.8.0 leader.
func TestAdminEnsembleMatchesSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ensemble")
	}
	e := startOpsEnsemble(t)
	leader := e.Member(e.Leader())
	for _, cmd := range []string{"leader", "zabstate", "voting_view", "server_stats"} {
		got := decodeJSON(t, cmd, adminGet(t, leader, cmd))
		want := decodeJSON(t, cmd, readSample(t, cmd+".leader.json"))
		for _, d := range shapeDiff(cmd, got, want, nil) {
			t.Errorf("%s", d)
		}
	}
	for i := range e.Size() {
		s := e.Member(i)
		got := decodeJSON(t, "leader", adminGet(t, s, "lead"))
		if got["is_leader"] != (s == leader) || got["leader_id"] != json.Number(strconv.FormatInt(leader.cfg.MyID, 10)) {
			t.Errorf("member %d: leader reply %v", s.cfg.MyID, got)
		}
		view := decodeJSON(t, "voting_view", adminGet(t, s, "voting_view"))["current_config"].(map[string]any)
		self := view[strconv.FormatInt(s.cfg.MyID, 10)].(map[string]any)
		if len(view) != 3 || self["client_address"] != s.Addr().String() {
			t.Errorf("member %d: voting view %v", s.cfg.MyID, view)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{{0, "0.0"}, {3.5, "3.5"}, {3, "3.0"}, {3.54549, "3.5455"}, {0.16666, "0.1667"}, {12345.6, "12345.6"}}
	for _, c := range cases {
		if got := javaDouble(c.in); got != c.want {
			t.Errorf("javaDouble(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// startOpsEnsemble starts a three-member ensemble of test servers in
// process (tickTime 200 ms), stopped when the test ends.
func startOpsEnsemble(t *testing.T) *testutil.Ensemble[*testServer] {
	t.Helper()
	return testutil.StartEnsemble(t, testutil.EnsembleSpec[*testServer]{Size: 3, Ports: ports.ForOps(),
		Base: func(int) conf.Config {
			cfg := opsConfig(t)
			cfg.TickTime = 200
			return cfg
		},
		New: func(_ int, cfg conf.Config) (*testServer, error) {
			return newTestServer(testOptions{Config: cfg, Logger: testutil.Logger(t, slog.LevelWarn)})
		}})
}
