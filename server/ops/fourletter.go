package ops

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/watch"
)

// notServing is what most four-letter words answer while the server has no
// quorum or has not caught up.
const notServing = "This ZooKeeper instance is not currently serving requests\n"

// traceMask is what gtmk reports; ZooKeeper's default mask.
const traceMask = 306

// fourLetter renders one command. in is the rest of the asking
// connection's input (stmk reads its mask from it).
func (o *Surfaces) fourLetter(cmd string, secure bool, w *strings.Builder, in io.Reader) {
	if !o.serving() {
		switch cmd {
		case "ruok":
			w.WriteString("imok")
		case "isro":
			w.WriteString("null")
		case "envi":
			o.writeEnvi(w)
		case "gtmk":
			w.WriteString(strconv.Itoa(traceMask))
		default:
			w.WriteString(notServing)
		}
		return
	}
	switch cmd {
	case "ruok":
		w.WriteString("imok")
	case "isro":
		w.WriteString(o.isro())
	case "srvr":
		o.writeSrvr(w, false, secure)
	case "stat":
		o.writeSrvr(w, true, secure)
	case "cons":
		for _, c := range o.st.Connections() {
			if c.Secure == secure {
				writeCons(w, c, true)
			}
		}
		w.WriteString("\n")
	case "crst":
		o.st.ResetConnectionStats()
		w.WriteString("Connection stats reset.\n")
	case "srst":
		o.st.ResetStats()
		w.WriteString("Server stats reset.\n")
	case "envi":
		o.writeEnvi(w)
	case "conf":
		o.writeConf(w)
	case "mntr":
		for _, kv := range o.monitorValues() {
			fmt.Fprintf(w, "zk_%s\t%s\n", kv.key, kv.value)
		}
	case "dirs":
		fmt.Fprintf(w, "datadir_size: %d\nlogdir_size: %d\n", conf.DirSize(o.snapDir()), conf.DirSize(o.txnLogDir()))
	case "dump":
		o.writeDump(w)
	case "wchs":
		watch.WriteWCHS(w, o.st.Watches())
	case "wchc":
		watch.WriteWCHC(w, o.st.Watches())
	case "wchp":
		watch.WriteWCHP(w, o.st.Watches())
	case "gtmk":
		w.WriteString(strconv.Itoa(traceMask))
	case "stmk":
		var mask [8]byte
		if _, err := io.ReadFull(in, mask[:]); err == nil {
			w.WriteString(strconv.FormatInt(int64(binary.BigEndian.Uint64(mask[:])), 10))
		}
	case "hash":
		o.writeHash(w)
	}
}

// serving reports whether the server serves clients, read-write or
// read-only. A fenced member serves nobody, and says so from the moment
// it is fenced, before its serving supervisor has closed the doors.
func (o *Surfaces) serving() bool {
	return (o.st.Serving() || o.st.ReadOnly()) && o.st.Replica().Fenced() == nil
}

// writeHash lists the digest log as ZooKeeper 3.9's hash does: one
// "<zxid in hex>: <digest>" line per record, oldest first, the digest in
// decimal as the Java long ZooKeeper keeps (so ours reads as signed).
func (o *Surfaces) writeHash(w *strings.Builder) {
	for _, d := range o.st.Replica().Digests() {
		fmt.Fprintf(w, "%x: %d\n", uint64(d.Zxid), int64(d.Digest))
	}
}

func (o *Surfaces) versionLine() string {
	return fmt.Sprintf("%s, built on %s", server.Version, server.BuildDate)
}

// writeSrvr writes srvr, or stat (withClients) with the connections of
// the port the command came on (secure: secureClientPort).
func (o *Surfaces) writeSrvr(w *strings.Builder, withClients, secure bool) {
	fmt.Fprintf(w, "Zookeeper version: %s\n", o.versionLine())
	if withClients {
		w.WriteString("Clients:\n")
		for _, c := range o.st.Connections() {
			if c.Secure == secure {
				writeCons(w, c, false)
			}
		}
		w.WriteString("\n")
	}
	st := o.st.Stats()
	fmt.Fprintf(w, "Latency min/avg/max: %d/%s/%d\n", st.Latency.Min, javaDouble(st.Latency.Avg()), st.Latency.Max)
	fmt.Fprintf(w, "Received: %d\n", st.PacketsReceived)
	fmt.Fprintf(w, "Sent: %d\n", st.PacketsSent)
	fmt.Fprintf(w, "Connections: %d\n", len(o.st.Connections()))
	fmt.Fprintf(w, "Outstanding: %d\n", st.Outstanding)
	fmt.Fprintf(w, "Zxid: 0x%x\n", o.st.Replica().LastZxid())
	fmt.Fprintf(w, "Mode: %s\n", o.st.Mode())
	fmt.Fprintf(w, "Node count: %d\n", o.nodeCount())
	if o.st.Mode() == "leader" {
		last, min, max := o.st.Replica().ProposalSizes()
		fmt.Fprintf(w, "Proposal sizes last/min/max: %d/%d/%d\n", last, min, max)
	}
}

// isro is the isro answer of a serving member: ro from the read-only
// server, rw otherwise (a member serving neither answers null).
func (o *Surfaces) isro() string {
	if o.st.ReadOnly() {
		return "ro"
	}
	return "rw"
}

// nodeCount is ZooKeeper's node count: the root is counted twice there
// (stored under "" and "/"), so it is one more than the number of znodes.
func (o *Surfaces) nodeCount() int { return o.st.Replica().Tree().NodeCount() + 1 }

// javaDouble formats a float as Java's Double.toString would for the short
// values the latency lines use (rounded to 4 decimals, at least one).
func javaDouble(f float64) string {
	v := strconv.FormatFloat(float64(int64(f*10000+0.5))/10000, 'f', -1, 64)
	if !strings.Contains(v, ".") {
		v += ".0"
	}
	return v
}

// opAbbrev is the lop= abbreviation of cons.
var opAbbrev = map[jute.OpCode]string{
	jute.OpPing: "PING", jute.OpCreateSession: "SESS", jute.OpMulti: "MULT", jute.OpMultiRead: "MLTR",
	jute.OpCreate: "CREA", jute.OpCreate2: "CREA", jute.OpCreateContainer: "CREA", jute.OpCreateTTL: "CREA",
	jute.OpDelete: "DELE", jute.OpSetData: "SETD", jute.OpReconfig: "RECO", jute.OpSetACL: "SETA",
	jute.OpCloseSession: "CLOS", jute.OpSync: "SYNC", jute.OpCheck: "CHEC", jute.OpExists: "EXIS",
	jute.OpGetData: "GETD", jute.OpSetWatches: "SETW", jute.OpSetWatches2: "STW2", jute.OpAddWatch: "ADDW",
	jute.OpGetACL: "GETA", jute.OpGetChildren: "GETC", jute.OpGetChildren2: "GETC",
	jute.OpGetAllChildrenNumber: "GETACN", jute.OpCheckWatches: "CHKW", jute.OpRemoveWatches: "REMW",
	jute.OpWhoAmI: "HOMI", jute.OpGetEphemerals: "GETE", jute.OpAuth: "AUTH", jute.OpSASL: "SASL",
}

// writeCons renders one connection line of cons, as ZooKeeper prints it.
func writeCons(w *strings.Builder, c server.ConnectionStats, full bool) {
	sid := c.SessionID
	interest := 0
	if sid != 0 {
		interest = 1
	}
	fmt.Fprintf(w, " /%s[%d](queued=%d,recved=%d,sent=%d", c.Remote, interest, c.Queued, c.Received, c.Sent)
	if full && sid != 0 {
		fmt.Fprintf(w, ",sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(sid), lastOp(c), c.Established.UnixMilli(), c.Timeout, uint32(c.LastCxid),
			uint64(c.LastZxid), c.LastResp, c.LastLatency, c.Latency.Min, int64(c.Latency.Avg()), c.Latency.Max)
	}
	w.WriteString(")\n")
}

// lastOp is cons's lop: the abbreviation of the connection's last
// operation, NA before any.
func lastOp(c server.ConnectionStats) string {
	if !c.HasLastOp {
		return "NA"
	}
	return opAbbrev[c.LastOp]
}

// snapDir is the snapshot directory (dataDir/version-2).
func (o *Surfaces) snapDir() string { d, _ := o.st.DataDirs(); return d }

// absDir makes a directory absolute for display, as ZooKeeper shows them.
func (o *Surfaces) absDir(d string) string {
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// txnLogDir is the transaction log directory (dataLogDir/version-2).
func (o *Surfaces) txnLogDir() string { _, d := o.st.DataDirs(); return d }

// clientPort is the plaintext (or unified) client port, -1 when only
// secureClientPort is open, as ZooKeeper shows it.
func (o *Surfaces) clientPort() int {
	if o.cfg.NoClientPort {
		return -1
	}
	return portOf(o.st.Addr())
}

// portOf is a listener's TCP port, 0 for none.
func portOf(a net.Addr) int {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.Port
	}
	return 0
}

func (o *Surfaces) writeConf(w *strings.Builder) {
	rt := conf.Runtime{
		ClientPort:       o.clientPort(),
		SecureClientPort: portOf(o.st.SecureAddr()),
		DataDir:          o.absDir(o.snapDir()),
		DataLogDir:       o.absDir(o.txnLogDir()),
		DataDirSize:      conf.DirSize(o.snapDir()),
		DataLogSize:      conf.DirSize(o.txnLogDir()),
	}
	// As ZooKeeper sends it: an ensemble member's ends with its
	// "version=" line and no newline.
	w.WriteString(o.cfg.ConfText(rt))
}

func (o *Surfaces) writeEnvi(w *strings.Builder) {
	w.WriteString("Environment:\n")
	for _, kv := range o.environment() {
		fmt.Fprintf(w, "%s=%s\n", kv.key, kv.value)
	}
}

type keyValue struct{ key, value string }

// environment lists envi's keys. The java.* keys describe the Go runtime
// that stands in for the JVM, so parsers find every key they expect.
func (o *Surfaces) environment() []keyValue {
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	uname, uhome := "", ""
	if u, err := user.Current(); err == nil {
		uname, uhome = u.Username, u.HomeDir
	}
	osVersion, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mb := func(b uint64) string { return strconv.FormatUint(b>>20, 10) + "MB" }
	return []keyValue{
		{"zookeeper.version", o.versionLine()},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "zkserverd (Go runtime)"},
		{"java.home", filepath.Dir(exe)},
		{"java.class.path", exe},
		{"java.library.path", ""},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", "<NA>"},
		{"os.name", strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]},
		{"os.arch", runtime.GOARCH},
		{"os.version", strings.TrimSpace(string(osVersion))},
		{"user.name", uname},
		{"user.home", uhome},
		{"user.dir", wd},
		{"os.memory.free", mb(ms.HeapIdle)},
		{"os.memory.max", mb(ms.Sys)},
		{"os.memory.total", mb(ms.HeapSys)},
	}
}

// monitorValues are mntr's lines in ZooKeeper's order, then zkserverd's own.
func (o *Surfaces) monitorValues() []keyValue {
	st := o.st.Stats()
	tree := o.st.Replica().Tree()
	openFDs, maxFDs := fdCounts()
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	minResp := st.MinResponseSize
	if minResp < 0 {
		minResp = 0
	}
	kvs := []keyValue{
		{"version", o.versionLine()},
		{"server_state", o.st.Mode()},
		{"ephemerals_count", i(int64(tree.EphemeralCount()))},
		{"num_alive_connections", i(int64(len(o.st.Connections())))},
		{"avg_latency", javaDouble(st.Latency.Avg())},
		{"outstanding_requests", i(st.Outstanding)},
		{"znode_count", i(int64(o.nodeCount()))},
		{"global_sessions", i(int64(o.st.Replica().Sessions().Len()))},
		{"non_mtls_remote_conn_count", "0"},
		{"last_client_response_size", i(st.LastResponseSize)},
		{"packets_sent", i(st.PacketsSent)},
		{"packets_received", i(st.PacketsReceived)},
		{"max_client_response_size", i(st.MaxResponseSize)},
		{"connection_drop_probability", "0.0"},
		{"watch_count", i(int64(o.st.Watches().Count()))},
		{"auth_failed_count", i(st.AuthFailed)},
		{"min_latency", i(st.Latency.Min)},
		{"max_file_descriptor_count", i(maxFDs)},
		{"approximate_data_size", i(tree.ApproximateDataSize())},
		{"open_file_descriptor_count", i(openFDs)},
		{"local_sessions", i(int64(o.st.LocalSessionCount()))},
		{"uptime", i(time.Since(o.st.Started()).Milliseconds())},
		{"max_latency", i(st.Latency.Max)},
		{"outstanding_tls_handshake", "0"},
		{"min_client_response_size", i(minResp)},
		{"non_mtls_local_conn_count", "0"},
		{"digest_mismatches_count", i(o.st.Replica().DigestMismatches())},
		{"slow_client_disconnects", i(st.SlowDisconnects)},
		{"connection_panics", i(st.ConnectionPanics)},
		{"memory_limit_bytes", i(st.Memory.LimitBytes)},
		{"memory_live_heap_bytes", i(st.Memory.LiveHeapBytes)},
		{"memory_refusing", i(int64(boolGauge(st.Memory.Refusing)))},
		{"memory_refused_writes", i(st.Memory.RefusedWrites)},
	}
	kvs = append(kvs, summaryValues("readlatency", st.ReadLatency)...)
	kvs = append(kvs, summaryValues("updatelatency", st.UpdateLatency)...)
	kvs = append(kvs, summaryValues("fsynctime", st.FsyncTime)...)
	return append(kvs, o.quorumValues()...)
}

// quorumValues are mntr's ensemble keys: the peer state on every member,
// and the leader's view of its learners. The read-only server has none, as
// ZooKeeper's is not a quorum server.
func (o *Surfaces) quorumValues() []keyValue {
	if !o.st.Replica().Clustered() || o.st.ReadOnly() {
		return nil
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	state := map[string]string{"leader": "leading - broadcast", "follower": "following - broadcast",
		"observer": "observing - broadcast"}[o.st.Mode()]
	if state == "" {
		state = "looking"
	}
	kvs := []keyValue{{"peer_state", state}}
	if o.st.Mode() != "leader" {
		return kvs
	}
	m := o.st.Replica().Membership()
	last, min, max := o.st.Replica().ProposalSizes()
	return append(kvs,
		keyValue{"learners", i(int64(m.Followers + m.Observers))},
		keyValue{"synced_followers", i(int64(m.SyncedFollowers))},
		keyValue{"synced_non_voting_followers", "0"},
		keyValue{"synced_observers", i(int64(m.SyncedObservers))},
		keyValue{"pending_syncs", "0"},
		keyValue{"last_proposal_size", i(last)},
		keyValue{"min_proposal_size", i(min)},
		keyValue{"max_proposal_size", i(max)},
		keyValue{"leader_uptime", i(time.Since(m.LeaderSince).Milliseconds())},
		keyValue{"quorum_size", i(int64(m.QuorumSize))},
	)
}

// summaryValues renders mntr's five summary keys for name (zk_avg_<name>,
// zk_min_<name>, zk_max_<name>, zk_cnt_<name>, zk_sum_<name>).
func summaryValues(name string, l server.LatencyStats) []keyValue {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []keyValue{
		{"avg_" + name, javaDouble(l.Avg())}, {"min_" + name, i(l.Min)}, {"max_" + name, i(l.Max)},
		{"cnt_" + name, i(l.Count)}, {"sum_" + name, i(l.Sum)},
	}
}

// fdCounts returns the open descriptor count and the process limit.
func fdCounts() (open, limit int64) {
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = int64(len(entries))
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		limit = int64(rl.Cur)
	}
	return open, limit
}

// javaDate formats t as java.util.Date.toString does.
func javaDate(t time.Time) string { return t.UTC().Format("Mon Jan 02 15:04:05 MST 2006") }

func (o *Surfaces) writeDump(w *strings.Builder) {
	buckets := o.st.SessionExpiry()
	times := make([]time.Time, 0, len(buckets))
	total := 0
	for t, ids := range buckets {
		times = append(times, t)
		total += len(ids)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	w.WriteString("SessionTracker dump:\n")
	fmt.Fprintf(w, "Session Sets (%d)/(%d):\n", len(times), total)
	for _, t := range times {
		ids := buckets[t]
		fmt.Fprintf(w, "%d expire at %s:\n", len(ids), javaDate(t))
		for _, id := range ids {
			fmt.Fprintf(w, "\t0x%x\n", uint64(id))
		}
	}
	w.WriteString("ephemeral nodes dump:\n")
	sessions := o.st.Replica().Sessions().All()
	tree := o.st.Replica().Tree()
	var withEph []int64
	for _, info := range sessions {
		if len(tree.SessionEphemerals(info.ID)) > 0 {
			withEph = append(withEph, info.ID)
		}
	}
	fmt.Fprintf(w, "Sessions with Ephemerals (%d):\n", len(withEph))
	for _, id := range withEph {
		fmt.Fprintf(w, "0x%x:\n", uint64(id))
		for _, p := range tree.SessionEphemerals(id) {
			fmt.Fprintf(w, "\t%s\n", p)
		}
	}
	conns := o.st.Connections()
	w.WriteString("Connections dump:\n")
	fmt.Fprintf(w, "Connections Sets (%d)/(%d):\n", len(conns), len(conns))
	for _, c := range conns {
		fmt.Fprintf(w, "1 expire at %s:\n", javaDate(c.Established.Add(time.Duration(c.Timeout)*time.Millisecond)))
		fmt.Fprintf(w, "\tip: /%s sessionId: 0x%x\n", c.Remote, uint64(c.SessionID))
	}
}
