package ops

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/txnlog"
)

// The AdminServer answers GET <admin.commandURL>/<command> with the JSON
// object ZooKeeper's Jetty AdminServer prints (see docs/monitoring.md):
// the command's fields, then "command" (its primary name) and "error".

// adminCommand is one AdminServer command.
type adminCommand struct {
	// names holds the primary name first, then the aliases.
	names []string
	// serverRequired commands answer "not currently serving" while the
	// server has no quorum or has not caught up.
	serverRequired bool
	// run returns the command's fields, or an error message (which
	// ZooKeeper prints before "command", with no other field).
	run func(o *Surfaces, args url.Values) (jsonObject, string)
}

// notServingError is the error of a serverRequired command while the
// server is not serving.
const notServingError = "This ZooKeeper instance is not currently serving requests"

// adminCommands lists the commands of ZooKeeper 3.8's AdminServer.
func adminCommands() []adminCommand {
	need, free := true, false
	return []adminCommand{
		{[]string{"configuration", "conf", "config"}, need, (*Surfaces).adminConfiguration},
		{[]string{"connection_stat_reset", "crst"}, need, (*Surfaces).adminConnectionStatReset},
		{[]string{"connections", "cons"}, need, (*Surfaces).adminConnections},
		{[]string{"dirs"}, need, (*Surfaces).adminDirs},
		{[]string{"dump"}, need, (*Surfaces).adminDump},
		{[]string{"environment", "env", "envi"}, free, (*Surfaces).adminEnvironment},
		{[]string{"get_trace_mask", "gtmk"}, free, (*Surfaces).adminGetTraceMask},
		{[]string{"hash"}, need, (*Surfaces).adminHash},
		{[]string{"initial_configuration", "icfg"}, need, (*Surfaces).adminInitialConfiguration},
		{[]string{"is_read_only", "isro"}, need, (*Surfaces).adminIsReadOnly},
		{[]string{"last_snapshot", "lsnp"}, need, (*Surfaces).adminLastSnapshot},
		{[]string{"leader", "lead"}, need, (*Surfaces).adminLeader},
		{[]string{"monitor", "mntr"}, free, (*Surfaces).adminMonitor},
		{[]string{"observer_connection_stat_reset", "orst"}, need, (*Surfaces).adminNothing},
		{[]string{"observers", "obsr"}, need, (*Surfaces).adminObservers},
		{[]string{"ruok"}, need, (*Surfaces).adminNothing},
		{[]string{"server_stats", "srvr"}, need, (*Surfaces).adminServerStats},
		{[]string{"set_trace_mask", "stmk"}, free, (*Surfaces).adminSetTraceMask},
		{[]string{"stat_reset", "srst"}, need, (*Surfaces).adminStatReset},
		{[]string{"stats", "stat"}, need, (*Surfaces).adminStats},
		{[]string{"system_properties", "sysp"}, free, (*Surfaces).adminSystemProperties},
		{[]string{"voting_view"}, need, (*Surfaces).adminVotingView},
		{[]string{"watch_summary", "wchs"}, need, (*Surfaces).adminWatchSummary},
		{[]string{"watches", "wchc"}, need, (*Surfaces).adminWatches},
		{[]string{"watches_by_path", "wchp"}, need, (*Surfaces).adminWatchesByPath},
		{[]string{"zabstate"}, free, (*Surfaces).adminZabState},
	}
}

// adminHandler serves the AdminServer's HTTP requests. It is immutable
// after newAdminHandler.
type adminHandler struct {
	o       *Surfaces
	prefix  string // admin.commandURL, with a leading and no trailing slash
	byName  map[string]*adminCommand
	primary []string        // primary names, sorted
	backup  *backupCommands // snapshot and restore (backup.go)
}

func newAdminHandler(o *Surfaces) *adminHandler {
	h := &adminHandler{o: o, prefix: "/" + strings.Trim(o.cfg.AdminCommandURL, "/"), byName: make(map[string]*adminCommand),
		backup: newBackupCommands(o)}
	cmds := adminCommands()
	for i := range cmds {
		for _, n := range cmds[i].names {
			h.byName[n] = &cmds[i]
		}
		h.primary = append(h.primary, cmds[i].names[0])
	}
	slices.Sort(h.primary)
	return h
}

// ServeHTTP routes <prefix> and <prefix>/ to the index, <prefix>/<name> to
// a command; anything else is 404. Only GET (and HEAD) are allowed.
func (h *adminHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := h.route(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if h.backup.serve(w, r, name) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
		return
	}
	if name == "" {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		io.WriteString(w, h.index())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, h.run(name, r.URL.Query()))
}

// route returns the command name of a path under the prefix ("" for the
// index) and whether the path is under the prefix at all.
func (h *adminHandler) route(path string) (string, bool) {
	if path == h.prefix {
		return "", true
	}
	if h.prefix == "/" {
		return strings.TrimPrefix(path, "/"), true
	}
	name, ok := strings.CutPrefix(path, h.prefix+"/")
	return name, ok
}

// index is the HTML list of links to every primary command.
func (h *adminHandler) index() string {
	var b strings.Builder
	base := strings.TrimSuffix(h.prefix, "/")
	for _, n := range h.primary {
		fmt.Fprintf(&b, "<a href=\"%s/%s\">%s</a>\n<br/>\n", base, n, n)
	}
	return b.String()
}

// run executes a command and renders its JSON reply.
func (h *adminHandler) run(name string, args url.Values) string {
	cmd := h.byName[name]
	if cmd == nil {
		return encodeJSON(jsonObject{{"command", name}, {"error", "Unknown command: " + name}})
	}
	if cmd.serverRequired && !h.o.serving() {
		return encodeJSON(jsonObject{{"command", name}, {"error", notServingError}})
	}
	fields, errMsg := cmd.run(h.o, args)
	if errMsg != "" {
		return encodeJSON(jsonObject{{"error", errMsg}, {"command", cmd.names[0]}})
	}
	return encodeJSON(append(fields, jsonField{"command", cmd.names[0]}, jsonField{"error", nil}))
}

// startAdminServer serves the commands on admin.serverAddress:serverPort.
func (o *Surfaces) startAdminServer() error {
	addr := net.JoinHostPort(o.cfg.AdminServerAddress, strconv.Itoa(o.cfg.AdminServerPort))
	idle := time.Duration(o.cfg.AdminIdleTimeout) * time.Millisecond
	ep, err := serveHTTP(addr, o.adminRoutes(newAdminHandler(o)), idle, o.log) // handoff.go
	if err != nil {
		return fmt.Errorf("ops: admin server: %w", err)
	}
	o.mu.Lock()
	o.adminEP = ep
	o.mu.Unlock()
	o.log.Info("serving admin commands", "addr", ep.ln.Addr().String(), "url", o.cfg.AdminCommandURL)
	return nil
}

// adminNothing is a command without fields (ruok, orst: there are no
// observer connections to reset).
func (o *Surfaces) adminNothing(url.Values) (jsonObject, string) { return nil, "" }

// adminConfiguration renders the values of `conf` (parsed back from its
// lines, so both always agree) under ZooKeeper's JSON names.
func (o *Surfaces) adminConfiguration(url.Values) (jsonObject, string) {
	var b strings.Builder
	o.writeConf(&b)
	lines := make(map[string]string)
	for _, line := range strings.Split(b.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			lines[k] = v
		}
	}
	keys := []struct{ json, conf string }{
		{"client_port", "clientPort"}, {"data_dir", "dataDir"}, {"data_log_dir", "dataLogDir"},
		{"tick_time", "tickTime"}, {"max_client_cnxns", "maxClientCnxns"},
		{"min_session_timeout", "minSessionTimeout"}, {"max_session_timeout", "maxSessionTimeout"},
		{"server_id", "serverId"}, {"client_port_listen_backlog", "clientPortListenBacklog"},
	}
	var out jsonObject
	for _, k := range keys {
		v := lines[k.conf]
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out = append(out, jsonField{k.json, n})
		} else {
			out = append(out, jsonField{k.json, v})
		}
	}
	return out, ""
}

func (o *Surfaces) adminConnectionStatReset(url.Values) (jsonObject, string) {
	o.st.ResetConnectionStats()
	return nil, ""
}

func (o *Surfaces) adminConnections(url.Values) (jsonObject, string) {
	return jsonObject{{"connections", o.connectionInfo(false, false)}, {"secure_connections", o.connectionInfo(false, true)}}, ""
}

// connectionInfo describes the client connections of clientPort (secure:
// of secureClientPort), as ZooKeeper lists each connection factory's;
// brief keeps the first five fields (stats), as ZooKeeper does.
func (o *Surfaces) connectionInfo(brief, secure bool) jsonArray {
	out := jsonArray{}
	for _, c := range o.st.Connections() {
		if c.Secure == secure {
			out = append(out, connInfo(c, brief))
		}
	}
	return out
}

// info is a connection as ZooKeeper's getConnectionInfo shows it; the
// values are cons's.
func connInfo(c server.ConnectionStats, brief bool) jsonObject {
	sid := c.SessionID
	interest := 0
	if sid != 0 {
		interest = 1
	}
	o := jsonObject{
		{"remote_socket_address", c.Remote},
		{"interest_ops", interest},
		{"outstanding_requests", c.Queued},
		{"packets_received", c.Received},
		{"packets_sent", c.Sent},
	}
	if brief {
		return o
	}
	return append(o,
		jsonField{"session_id", sid},
		jsonField{"last_operation", lastOp(c)},
		jsonField{"established", c.Established.UnixMilli()},
		jsonField{"session_timeout", c.Timeout},
		jsonField{"last_cxid", c.LastCxid},
		jsonField{"last_zxid", c.LastZxid},
		jsonField{"last_response_time", c.LastResp},
		jsonField{"last_latency", c.LastLatency},
		jsonField{"min_latency", c.Latency.Min},
		jsonField{"avg_latency", int64(c.Latency.Avg())},
		jsonField{"max_latency", c.Latency.Max},
	)
}

func (o *Surfaces) adminDirs(url.Values) (jsonObject, string) {
	return jsonObject{
		{"datadir_size", conf.DirSize(o.snapDir())},
		{"logdir_size", conf.DirSize(o.txnLogDir())},
	}, ""
}

// adminDump maps expiry times (ms) to the sessions expiring then, and
// sessions to their ephemeral nodes, as dump shows them.
func (o *Surfaces) adminDump(url.Values) (jsonObject, string) {
	buckets := o.st.SessionExpiry()
	times := make([]time.Time, 0, len(buckets))
	for t := range buckets {
		times = append(times, t)
	}
	slices.SortFunc(times, time.Time.Compare)
	expiry := jsonObject{}
	for _, t := range times {
		ids := slices.Clone(buckets[t])
		slices.Sort(ids)
		expiry = append(expiry, jsonField{strconv.FormatInt(t.UnixMilli(), 10), ids})
	}
	tree := o.st.Replica().Tree()
	ephemerals := jsonObject{}
	for _, info := range o.st.Replica().Sessions().All() {
		if paths := tree.SessionEphemerals(info.ID); len(paths) > 0 {
			paths = slices.Clone(paths)
			slices.Sort(paths)
			ephemerals = append(ephemerals, jsonField{strconv.FormatInt(info.ID, 10), paths})
		}
	}
	return jsonObject{{"expiry_time_to_session_ids", expiry}, {"session_id_to_ephemeral_paths", ephemerals}}, ""
}

func (o *Surfaces) adminEnvironment(url.Values) (jsonObject, string) {
	var out jsonObject
	for _, kv := range o.environment() {
		out = append(out, jsonField{kv.key, kv.value})
	}
	return out, ""
}

func (o *Surfaces) adminGetTraceMask(url.Values) (jsonObject, string) {
	return jsonObject{{"tracemask", traceMask}}, ""
}

// adminSetTraceMask echoes the mask, as stmk does (zkserverd has no trace
// levels to set).
func (o *Surfaces) adminSetTraceMask(args url.Values) (jsonObject, string) {
	if !args.Has("traceMask") {
		return nil, "setTraceMask requires long traceMask argument"
	}
	v := args.Get("traceMask")
	mask, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, "setTraceMask requires long traceMask argument, got " + v
	}
	return jsonObject{{"tracemask", mask}}, ""
}

// adminHash lists the digest log as ZooKeeper 3.9's hash command does,
// oldest first: per record the zxid and the digest (a Java long there, so
// ours reads as signed) under ZxidDigest's names, then zkserverd's own
// index, the log position every member records at (records with the same
// index must have the same digest on every member). ZooKeeper's
// digest_version is left out: these digests are not computed its way.
func (o *Surfaces) adminHash(url.Values) (jsonObject, string) {
	digests := jsonArray{}
	for _, d := range o.st.Replica().Digests() {
		digests = append(digests, jsonObject{{"zxid", d.Zxid}, {"digest", int64(d.Digest)}, {"index", int64(d.Index)}})
	}
	return jsonObject{{"digests", digests}}, ""
}

// adminInitialConfiguration is null: the server is not given the text of
// the file it was configured from.
func (o *Surfaces) adminInitialConfiguration(url.Values) (jsonObject, string) {
	return jsonObject{{"initial_configuration", nil}}, ""
}

// adminIsReadOnly is isro's JSON: true while the read-only server runs.
func (o *Surfaces) adminIsReadOnly(url.Values) (jsonObject, string) {
	return jsonObject{{"read_only", o.st.ReadOnly()}}, ""
}

// adminLastSnapshot reports the newest snapshot: its zxid (hex, no 0x) and
// when it was taken (seconds). Before the first snapshot, and in memory,
// it reports zxid 0 at the start time, as a fresh ZooKeeper reports the
// snapshot it writes on startup.
func (o *Surfaces) adminLastSnapshot(url.Values) (jsonObject, string) {
	zxid, at, ok := lastSnapshot(o.snapDir())
	if !ok {
		zxid, at = 0, o.st.Started()
	}
	return jsonObject{{"zxid", strconv.FormatUint(uint64(zxid), 16)}, {"timestamp", at.Unix()}}, ""
}

// lastSnapshot finds the newest complete snapshot (one with its meta.json)
// among the snapshot directories of dataDir (replication.SnapshotDirs: not
// an unfinished one, nor one set aside as damaged) and reads the last zxid
// from the FSM snapshot header at the start of its state.bin
// (txnlog.ReadSnapshotHeader).
func lastSnapshot(dataDir string) (zxid int64, at time.Time, ok bool) {
	dirs, err := replication.SnapshotDirs(dataDir)
	if err != nil {
		return 0, time.Time{}, false
	}
	i := slices.IndexFunc(dirs, func(d replication.SnapshotDir) bool {
		_, err := os.Stat(filepath.Join(d.Path, "meta.json"))
		return err == nil
	})
	if i < 0 {
		return 0, time.Time{}, false
	}
	f, err := os.Open(filepath.Join(dirs[i].Path, "state.bin"))
	if err != nil {
		return 0, time.Time{}, false
	}
	defer f.Close()
	h, _, err := txnlog.ReadSnapshotHeader(f)
	if err != nil {
		return 0, time.Time{}, false
	}
	return h.LastZxid, dirs[i].Taken, true
}

// adminLeader names the leader of an ensemble; a standalone server and the
// read-only server answer ZooKeeper's "server is not initialized".
func (o *Surfaces) adminLeader(url.Values) (jsonObject, string) {
	if !o.st.Replica().Clustered() || o.st.ReadOnly() {
		return nil, "server is not initialized"
	}
	id := o.st.Replica().Leader()
	leaderID, leaderIP := int64(-1), ""
	for _, m := range o.cfg.Servers {
		if id != 0 && m.ID == id {
			leaderID, leaderIP = id, m.Host
		}
	}
	return jsonObject{{"is_leader", o.st.Replica().IsLeader()}, {"leader_id", leaderID}, {"leader_ip", leaderIP}}, ""
}

// adminMonitor is mntr's data with numbers as JSON numbers.
func (o *Surfaces) adminMonitor(url.Values) (jsonObject, string) {
	var out jsonObject
	for _, kv := range o.monitorValues() {
		out = append(out, jsonField{kv.key, monitorValue(kv.value)})
	}
	return out, ""
}

// monitorValue turns an mntr value into a JSON number when it is one,
// keeping its text (so "0.0" stays 0.0); anything else stays a string.
func monitorValue(v string) any {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return jsonNumber(v)
	}
	if strings.ContainsAny(v, ".eE") && !strings.ContainsAny(v, "xX") {
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return jsonNumber(v)
		}
	}
	return v
}

func (o *Surfaces) adminObservers(url.Values) (jsonObject, string) {
	return jsonObject{{"synced_observers", 0}, {"observers", jsonArray{}}}, ""
}

func (o *Surfaces) adminServerStats(url.Values) (jsonObject, string) {
	return o.serverStatsFields(), ""
}

func (o *Surfaces) adminStats(url.Values) (jsonObject, string) {
	return append(o.serverStatsFields(),
		jsonField{"connections", o.connectionInfo(true, false)},
		jsonField{"secure_connections", o.connectionInfo(true, true)}), ""
}

// serverStatsFields are the fields of server_stats (srvr's data).
func (o *Surfaces) serverStatsFields() jsonObject {
	st := o.st.Stats()
	resp := responseStats(st)
	stats := jsonObject{
		{"packets_sent", st.PacketsSent},
		{"packets_received", st.PacketsReceived},
		{"fsync_threshold_exceed_count", o.st.Replica().SlowLogSyncs()},
		{"client_response_stats", resp},
		{"data_dir_size", conf.DirSize(o.snapDir())},
		{"log_dir_size", conf.DirSize(o.txnLogDir())},
		{"provider_null", false},
		{"server_state", o.st.Mode()},
		{"last_processed_zxid", o.st.Replica().LastZxid()},
		{"outstanding_requests", st.Outstanding},
		{"avg_latency", jsonDouble(st.Latency.Avg())},
		{"max_latency", st.Latency.Max},
		{"min_latency", st.Latency.Min},
		{"num_alive_client_connections", len(o.st.Connections())},
		{"uptime", time.Since(o.st.Started()).Milliseconds()},
		{"auth_failed_count", st.AuthFailed},
		{"non_mtlsremote_conn_count", 0},
		{"non_mtlslocal_conn_count", 0},
	}
	out := jsonObject{
		{"version", o.versionLine()},
		{"read_only", false},
		{"server_stats", stats},
		{"client_response", resp},
	}
	if o.st.Mode() == "leader" {
		out = append(out, jsonField{"proposal_stats", jsonObject{
			{"last_buffer_size", -1}, {"min_buffer_size", -1}, {"max_buffer_size", -1},
		}})
	}
	return append(out, jsonField{"node_count", o.nodeCount()})
}

// responseStats are the reply sizes; all -1 before the first reply, as
// ZooKeeper's buffer statistics start.
func responseStats(st server.Stats) jsonObject {
	last, min, max := st.LastResponseSize, st.MinResponseSize, st.MaxResponseSize
	if min < 0 {
		last, max = -1, -1
	}
	return jsonObject{{"last_buffer_size", last}, {"min_buffer_size", min}, {"max_buffer_size", max}}
}

func (o *Surfaces) adminStatReset(url.Values) (jsonObject, string) {
	o.st.ResetStats()
	return nil, ""
}

// adminSystemProperties lists the JVM-style properties that have a
// counterpart here, sorted: the runtime's (from envi) and the zoo.cfg keys
// ZooKeeper turns into "zookeeper.*" system properties when they differ
// from the defaults. Keys that look like secrets are left out.
func (o *Surfaces) adminSystemProperties(url.Values) (jsonObject, string) {
	props := map[string]string{
		"file.encoding": "UTF-8", "file.separator": string(filepath.Separator),
		"line.separator": "\n", "path.separator": string(filepath.ListSeparator),
	}
	for _, kv := range o.environment() {
		if strings.HasPrefix(kv.key, "java.") || strings.HasPrefix(kv.key, "user.") ||
			(strings.HasPrefix(kv.key, "os.") && !strings.HasPrefix(kv.key, "os.memory.")) {
			props[kv.key] = kv.value
		}
	}
	for k, v := range configProperties(o.cfg) {
		lower := strings.ToLower(k)
		if strings.Contains(lower, "password") || strings.Contains(lower, "digest") {
			continue
		}
		if !strings.HasPrefix(k, "zookeeper.") {
			k = "zookeeper." + k
		}
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(jsonObject, 0, len(keys))
	for _, k := range keys {
		out = append(out, jsonField{k, props[k]})
	}
	return out, ""
}

// configProperties returns the zoo.cfg keys that ZooKeeper keeps as system
// properties, for those that differ from the defaults, and every key kept
// uninterpreted.
func configProperties(cfg conf.Config) map[string]string {
	def := conf.Default()
	out := make(map[string]string)
	set := func(key string, v, d any) {
		if fmt.Sprint(v) != fmt.Sprint(d) {
			out[key] = fmt.Sprint(v)
		}
	}
	set("4lw.commands.whitelist", strings.Join(cfg.FourLetterWordWhitelist, ","), strings.Join(def.FourLetterWordWhitelist, ","))
	set("admin.enableServer", cfg.AdminEnableServer, def.AdminEnableServer)
	set("admin.serverAddress", cfg.AdminServerAddress, def.AdminServerAddress)
	set("admin.serverPort", cfg.AdminServerPort, def.AdminServerPort)
	set("admin.commandURL", cfg.AdminCommandURL, def.AdminCommandURL)
	set("admin.idleTimeout", cfg.AdminIdleTimeout, def.AdminIdleTimeout)
	set("extendedTypesEnabled", cfg.ExtendedTypesEnabled, def.ExtendedTypesEnabled)
	set("skipACL", cfg.SkipACL, def.SkipACL)
	set("snapCount", cfg.SnapCount, def.SnapCount)
	for id, class := range cfg.AuthProviders {
		out["authProvider."+strconv.Itoa(id)] = class
	}
	for k, v := range cfg.Extra {
		out[k] = v
	}
	return out
}

// adminVotingView lists the voting members of an ensemble (empty when
// standalone).
func (o *Surfaces) adminVotingView(url.Values) (jsonObject, string) {
	view := jsonObject{}
	if o.st.Replica().Clustered() {
		for _, m := range o.cfg.Servers {
			if m.Observer {
				continue
			}
			view = append(view, jsonField{strconv.FormatInt(m.ID, 10), jsonObject{
				{"server_addresses", jsonArray{hostPort(m.Host, m.PeerPort)}},
				{"election_addresses", jsonArray{hostPort(m.Host, m.ElectionPort)}},
				{"client_address", o.memberClientAddress(m)},
				{"learner_type", "participant"},
			}})
		}
	}
	return jsonObject{{"current_config", view}}, ""
}

// memberClientAddress is a member's client address as the voting view
// shows it: this server's own listener, another member's client address
// only when its server line has one.
func (o *Surfaces) memberClientAddress(m conf.Server) string {
	if m.ID == o.cfg.MyID {
		return o.clientAddress()
	}
	if m.ClientPort == 0 {
		return ""
	}
	host := m.ClientAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return hostPort(host, m.ClientPort)
}

// clientAddress is the client listener's address, an unspecified IP shown
// as 0.0.0.0 as Java does.
func (o *Surfaces) clientAddress() string {
	ta, ok := o.st.Addr().(*net.TCPAddr)
	if !ok {
		return o.st.Addr().String()
	}
	if ta.IP.IsUnspecified() {
		return hostPort("0.0.0.0", ta.Port)
	}
	return ta.String()
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func (o *Surfaces) adminWatchSummary(url.Values) (jsonObject, string) {
	conns, paths, total := o.st.Watches().Summary()
	return jsonObject{{"num_connections", conns}, {"num_paths", paths}, {"num_total_watches", total}}, ""
}

func (o *Surfaces) adminWatches(url.Values) (jsonObject, string) {
	byConn := o.st.Watches().ByConnection()
	ids := make([]int64, 0, len(byConn))
	for id := range byConn {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := jsonObject{}
	for _, id := range ids {
		out = append(out, jsonField{strconv.FormatInt(id, 10), byConn[id]})
	}
	return jsonObject{{"session_id_to_watched_paths", out}}, ""
}

func (o *Surfaces) adminWatchesByPath(url.Values) (jsonObject, string) {
	byPath := o.st.Watches().ByPath()
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out := jsonObject{}
	for _, p := range paths {
		out = append(out, jsonField{p, byPath[p]})
	}
	return jsonObject{{"path_to_session_ids", out}}, ""
}

// adminZabState is the member's protocol phase: on a standalone server
// only voting=false and an empty state, as ZooKeeper answers.
func (o *Surfaces) adminZabState(url.Values) (jsonObject, string) {
	if !o.st.Replica().Clustered() {
		return jsonObject{{"voting", false}, {"zabstate", ""}}, ""
	}
	self, _ := o.cfg.Self()
	zxid := o.st.Replica().LastZxid()
	state := "broadcast"
	switch {
	case o.st.ReadOnly() || o.st.Mode() == "looking":
		state = "election"
	case !o.st.Serving():
		state = "synchronization"
	}
	return jsonObject{
		{"myid", o.cfg.MyID},
		{"is_leader", o.st.Replica().IsLeader()},
		{"quorum_address", multipleAddresses(self.Host, self.PeerPort)},
		{"election_address", multipleAddresses(self.Host, self.ElectionPort)},
		{"client_address", o.clientAddress()},
		{"voting", !self.Observer},
		{"last_zxid", "0x" + strconv.FormatUint(uint64(zxid), 16)},
		{"zab_epoch", zxid >> 32},
		{"zab_counter", zxid & 0xffffffff},
		{"zabstate", state},
	}, ""
}

// multipleAddresses renders one address the way ZooKeeper's Jackson output
// shows its MultipleAddresses bean.
func multipleAddresses(host string, port int) jsonObject {
	addr := hostPort(host, port)
	return jsonObject{
		{"empty", false},
		{"all_addresses", jsonArray{addr}},
		{"all_reachable_addresses", jsonArray{addr}},
		{"one", addr},
		{"reachable_address", addr},
		{"wildcard_addresses", jsonArray{hostPort("0.0.0.0", port)}},
		{"all_ports", jsonArray{port}},
		{"all_host_strings", jsonArray{host}},
		{"all_reachable_addresses_or_all", jsonArray{addr}},
		{"reachable_or_one", addr},
	}
}

// jsonObject is a JSON object whose keys keep their order.
type jsonObject []jsonField

// jsonField is one key of a jsonObject.
type jsonField struct {
	key   string
	value any
}

// jsonArray is a JSON array.
type jsonArray []any

// jsonNumber is a number written as given.
type jsonNumber string

// jsonDouble is a Java double, written as Double.toString writes the
// short values of the statistics ("3.5", "0.0").
type jsonDouble float64

// encodeJSON renders v as Jackson's default pretty printer does: objects
// one "key" : value per line indented two spaces per level, arrays on one
// line ("[ a, b ]"), empty ones as "{ }" and "[ ]", and no final newline.
func encodeJSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v, 0)
	return b.String()
}

// writeJSON writes v; depth is the number of objects around it.
func writeJSON(b *strings.Builder, v any, depth int) {
	switch v := v.(type) {
	case jsonObject:
		writeJSONObject(b, v, depth)
	case jsonArray:
		writeJSONArray(b, len(v), func(i int) { writeJSON(b, v[i], depth) })
	case []string:
		writeJSONArray(b, len(v), func(i int) { writeJSONString(b, v[i]) })
	case []int64:
		writeJSONArray(b, len(v), func(i int) { b.WriteString(strconv.FormatInt(v[i], 10)) })
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		writeJSONString(b, v)
	case jsonNumber:
		b.WriteString(string(v))
	case jsonDouble:
		b.WriteString(javaDouble(float64(v)))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	default:
		writeJSONString(b, fmt.Sprint(v))
	}
}

func writeJSONObject(b *strings.Builder, o jsonObject, depth int) {
	if len(o) == 0 {
		b.WriteString("{ }")
		return
	}
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", depth+1))
		writeJSONString(b, f.key)
		b.WriteString(" : ")
		writeJSON(b, f.value, depth+1)
	}
	b.WriteByte('\n')
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteByte('}')
}

func writeJSONArray(b *strings.Builder, n int, elem func(int)) {
	if n == 0 {
		b.WriteString("[ ]")
		return
	}
	b.WriteString("[ ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		elem(i)
	}
	b.WriteString(" ]")
}

// writeJSONString quotes s as Jackson does: quote and backslash escaped,
// control characters as \b \t \n \f \r or \u00XX, everything else as is.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
