package server

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
	"github.com/zkserverd/zkserverd/watch"
)

// fourLetterWords are the commands recognised as the first four bytes of a
// connection.
var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "envi": true, "conf": true, "cons": true,
	"crst": true, "srst": true, "mntr": true, "isro": true, "dirs": true, "dump": true,
	"wchs": true, "wchc": true, "wchp": true, "gtmk": true, "stmk": true, "hash": true,
}

// fourLetterWord interprets a frame length as a command name.
func fourLetterWord(n int32) (string, bool) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	cmd := string(b[:])
	return cmd, fourLetterWords[cmd]
}

// traceMask is what gtmk reports; ZooKeeper's default mask.
const traceMask = 306

// runFourLetterWord writes a command's text reply; the connection is closed
// by the caller afterwards.
func (c *conn) runFourLetterWord(cmd string) {
	var b strings.Builder
	if !c.s.cfg.Allowed4LW(cmd) {
		fmt.Fprintf(&b, "%s is not executed because it is not in the whitelist.\n", cmd)
	} else {
		c.s.fourLetter(cmd, &b, c)
	}
	c.out.push([]byte(b.String()))
}

// fourLetter renders one command. self is the asking connection (stmk reads
// its mask from it).
func (s *Server) fourLetter(cmd string, w *strings.Builder, self *conn) {
	if !s.serving.Load() && !s.readOnly() {
		switch cmd {
		case "ruok":
			w.WriteString("imok")
		case "isro":
			w.WriteString("null")
		case "envi":
			s.writeEnvi(w)
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
		w.WriteString(s.isro())
	case "srvr":
		s.writeSrvr(w, false)
	case "stat":
		s.writeSrvr(w, true)
	case "cons":
		for _, c := range s.sortedConnections() {
			c.writeCons(w, true)
		}
		w.WriteString("\n")
	case "crst":
		for _, c := range s.connections() {
			c.resetStats()
		}
		w.WriteString("Connection stats reset.\n")
	case "srst":
		s.stats.reset()
		w.WriteString("Server stats reset.\n")
	case "envi":
		s.writeEnvi(w)
	case "conf":
		s.writeConf(w)
	case "mntr":
		for _, kv := range s.monitorValues() {
			fmt.Fprintf(w, "zk_%s\t%s\n", kv.key, kv.value)
		}
	case "dirs":
		fmt.Fprintf(w, "datadir_size: %d\nlogdir_size: %d\n", conf.DirSize(s.snapDir()), conf.DirSize(s.txnLogDir()))
	case "dump":
		s.writeDump(w)
	case "wchs":
		watch.WriteWCHS(w, s.watches)
	case "wchc":
		watch.WriteWCHC(w, s.watches)
	case "wchp":
		watch.WriteWCHP(w, s.watches)
	case "gtmk":
		w.WriteString(strconv.Itoa(traceMask))
	case "stmk":
		var mask [8]byte
		if _, err := io.ReadFull(self.br, mask[:]); err == nil {
			w.WriteString(strconv.FormatInt(int64(binary.BigEndian.Uint64(mask[:])), 10))
		}
	case "hash":
	}
}

func (s *Server) versionLine() string {
	return fmt.Sprintf("%s, built on %s", Version, BuildDate)
}

func (s *Server) writeSrvr(w *strings.Builder, withClients bool) {
	fmt.Fprintf(w, "Zookeeper version: %s\n", s.versionLine())
	if withClients {
		w.WriteString("Clients:\n")
		for _, c := range s.sortedConnections() {
			c.writeCons(w, false)
		}
		w.WriteString("\n")
	}
	min, avg, max, _ := s.stats.latency.snapshot()
	fmt.Fprintf(w, "Latency min/avg/max: %d/%s/%d\n", min, javaDouble(avg), max)
	fmt.Fprintf(w, "Received: %d\n", s.stats.packetsReceived.Load())
	fmt.Fprintf(w, "Sent: %d\n", s.stats.packetsSent.Load())
	fmt.Fprintf(w, "Connections: %d\n", len(s.connections()))
	fmt.Fprintf(w, "Outstanding: %d\n", s.stats.outstanding.Load())
	fmt.Fprintf(w, "Zxid: 0x%x\n", s.node.LastZxid())
	fmt.Fprintf(w, "Mode: %s\n", s.mode())
	fmt.Fprintf(w, "Node count: %d\n", s.nodeCount())
	if s.mode() == "leader" {
		last, min, max := s.node.ProposalSizes()
		fmt.Fprintf(w, "Proposal sizes last/min/max: %d/%d/%d\n", last, min, max)
	}
}

// mode is the server's role as srvr's Mode line and mntr's
// zk_server_state show it: read-only while the read-only server runs.
func (s *Server) mode() string {
	if s.readOnly() {
		return "read-only"
	}
	return s.node.Role()
}

// isro is the isro answer of a serving member: ro from the read-only
// server, rw otherwise (a member serving neither answers null).
func (s *Server) isro() string {
	if s.readOnly() {
		return "ro"
	}
	return "rw"
}

// nodeCount is ZooKeeper's node count: the root is counted twice there
// (stored under "" and "/"), so it is one more than the number of znodes.
func (s *Server) nodeCount() int { return s.node.Tree().NodeCount() + 1 }

// javaDouble formats a float as Java's Double.toString would for the short
// values the latency lines use (rounded to 4 decimals, at least one).
func javaDouble(f float64) string {
	v := strconv.FormatFloat(float64(int64(f*10000+0.5))/10000, 'f', -1, 64)
	if !strings.Contains(v, ".") {
		v += ".0"
	}
	return v
}

func (s *Server) sortedConnections() []*conn {
	cs := s.connections()
	sort.Slice(cs, func(i, j int) bool { return cs[i].established.Before(cs[j].established) })
	return cs
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

// writeCons renders one connection line (format C of admin.md).
func (c *conn) writeCons(w *strings.Builder, full bool) {
	sid := c.sessionID.Load()
	interest := 0
	if sid != 0 {
		interest = 1
	}
	fmt.Fprintf(w, " /%s[%d](queued=%d,recved=%d,sent=%d", c.nc.RemoteAddr().String(), interest,
		len(c.queue), c.recv.Load(), c.sent.Load())
	if full && sid != 0 {
		lop := "NA"
		if c.everOp.Load() {
			lop = opAbbrev[jute.OpCode(c.lastOp.Load())]
		}
		min, avg, max, _ := c.lat.snapshot()
		fmt.Fprintf(w, ",sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(sid), lop, c.established.UnixMilli(), c.timeout.Load(), uint32(c.lastCxid.Load()),
			uint64(c.lastZxid.Load()), c.lastResp.Load(), c.lastLatency.Load(), min, int64(avg), max)
	}
	w.WriteString(")\n")
}

func (c *conn) resetStats() {
	c.recv.Store(0)
	c.sent.Store(0)
	c.lat.reset()
	c.everOp.Store(false)
	c.lastCxid.Store(0)
	c.lastZxid.Store(0)
	c.lastResp.Store(0)
	c.lastLatency.Store(0)
}

func (s *Server) snapDir() string { return filepath.Join(s.dataDir, "version-2") }

// absDir makes a directory absolute for display, as ZooKeeper shows them.
func (s *Server) absDir(d string) string {
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}
func (s *Server) txnLogDir() string { return filepath.Join(s.logDir, "version-2") }

func (s *Server) writeConf(w *strings.Builder) {
	rt := conf.Runtime{
		ClientPort:  s.ln.Addr().(*net.TCPAddr).Port,
		DataDir:     s.absDir(s.snapDir()),
		DataLogDir:  s.absDir(s.txnLogDir()),
		DataDirSize: conf.DirSize(s.snapDir()),
		DataLogSize: conf.DirSize(s.txnLogDir()),
	}
	for _, line := range s.cfg.LinesFor(rt) {
		w.WriteString(line)
		w.WriteString("\n")
	}
}

func (s *Server) writeEnvi(w *strings.Builder) {
	w.WriteString("Environment:\n")
	for _, kv := range s.environment() {
		fmt.Fprintf(w, "%s=%s\n", kv.key, kv.value)
	}
}

type keyValue struct{ key, value string }

// environment lists envi's keys. The java.* keys describe the Go runtime
// that stands in for the JVM, so parsers find every key they expect.
func (s *Server) environment() []keyValue {
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
		{"zookeeper.version", s.versionLine()},
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
func (s *Server) monitorValues() []keyValue {
	min, avg, max, _ := s.stats.latency.snapshot()
	tree := s.node.Tree()
	openFDs, maxFDs := fdCounts()
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	minResp := s.stats.minRespSize.Load()
	if minResp < 0 {
		minResp = 0
	}
	kvs := []keyValue{
		{"version", s.versionLine()},
		{"server_state", s.mode()},
		{"ephemerals_count", i(int64(tree.EphemeralCount()))},
		{"num_alive_connections", i(int64(len(s.connections())))},
		{"avg_latency", javaDouble(avg)},
		{"outstanding_requests", i(s.stats.outstanding.Load())},
		{"znode_count", i(int64(s.nodeCount()))},
		{"global_sessions", i(int64(s.node.Sessions().Len()))},
		{"non_mtls_remote_conn_count", "0"},
		{"last_client_response_size", i(s.stats.lastRespSize.Load())},
		{"packets_sent", i(s.stats.packetsSent.Load())},
		{"packets_received", i(s.stats.packetsReceived.Load())},
		{"max_client_response_size", i(s.stats.maxRespSize.Load())},
		{"connection_drop_probability", "0.0"},
		{"watch_count", i(int64(s.watches.Count()))},
		{"auth_failed_count", i(s.stats.authFailed.Load())},
		{"min_latency", i(min)},
		{"max_file_descriptor_count", i(maxFDs)},
		{"approximate_data_size", i(tree.ApproximateDataSize())},
		{"open_file_descriptor_count", i(openFDs)},
		{"local_sessions", i(int64(s.localSessionCount()))},
		{"uptime", i(time.Since(s.started).Milliseconds())},
		{"max_latency", i(max)},
		{"outstanding_tls_handshake", "0"},
		{"min_client_response_size", i(minResp)},
		{"non_mtls_local_conn_count", "0"},
		{"slow_client_disconnects", i(s.stats.slowDisconnects.Load())},
		{"connection_panics", i(s.stats.connPanics.Load())},
	}
	kvs = append(kvs, s.stats.readLatency.summaryValues("readlatency")...)
	kvs = append(kvs, s.stats.updateLatency.summaryValues("updatelatency")...)
	kvs = append(kvs, s.stats.fsyncTime.summaryValues("fsynctime")...)
	return append(kvs, s.quorumValues()...)
}

// quorumValues are mntr's ensemble keys: the peer state on every member,
// and the leader's view of its learners. The read-only server has none, as
// ZooKeeper's is not a quorum server.
func (s *Server) quorumValues() []keyValue {
	if !s.node.Clustered() || s.readOnly() {
		return nil
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	state := map[string]string{"leader": "leading - broadcast", "follower": "following - broadcast",
		"observer": "observing - broadcast"}[s.mode()]
	if state == "" {
		state = "looking"
	}
	kvs := []keyValue{{"peer_state", state}}
	if s.mode() != "leader" {
		return kvs
	}
	m := s.node.Membership()
	last, min, max := s.node.ProposalSizes()
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

func (s *Server) writeDump(w *strings.Builder) {
	buckets := s.tracker.Buckets()
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
	sessions := s.node.Sessions().All()
	tree := s.node.Tree()
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
	conns := s.sortedConnections()
	w.WriteString("Connections dump:\n")
	fmt.Fprintf(w, "Connections Sets (%d)/(%d):\n", len(conns), len(conns))
	for _, c := range conns {
		fmt.Fprintf(w, "1 expire at %s:\n", javaDate(c.established.Add(time.Duration(c.timeout.Load())*time.Millisecond)))
		fmt.Fprintf(w, "\tip: /%s sessionId: 0x%x\n", c.nc.RemoteAddr().String(), uint64(c.sessionID.Load()))
	}
}
