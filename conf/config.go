package conf

import (
	"net"
	"strconv"
)

// Server is one `server.N` line: the members of an ensemble.
type Server struct {
	ID           int64  // N
	Host         string // host name or IP (IPv6 without brackets)
	PeerPort     int    // quorum port (followers connect to the leader here)
	ElectionPort int    // leader election port
	Observer     bool   // ":observer" (default participant)
	// ClientAddress and ClientPort come from the optional
	// ";[clientAddress:]clientPort" suffix; ClientPort 0 means absent and
	// ClientAddress "" means all interfaces (ZooKeeper shows 0.0.0.0).
	ClientAddress string
	ClientPort    int
}

// String renders the server as ZooKeeper prints it after "server.N=":
// host:peer:election:participant|observer[;clientHost:clientPort].
func (s Server) String() string {
	out := bracketHost(s.Host) + ":" + strconv.Itoa(s.PeerPort) + ":" + strconv.Itoa(s.ElectionPort)
	if s.Observer {
		out += ":observer"
	} else {
		out += ":participant"
	}
	if s.ClientPort != 0 {
		host := s.ClientAddress
		if host == "" {
			host = "0.0.0.0"
		}
		out += ";" + bracketHost(host) + ":" + strconv.Itoa(s.ClientPort)
	}
	return out
}

// bracketHost wraps an IPv6 literal in brackets, as ZooKeeper prints it.
func bracketHost(h string) string {
	for i := 0; i < len(h); i++ {
		if h[i] == ':' {
			return "[" + h + "]"
		}
	}
	return h
}

// Config is a parsed zoo.cfg. Durations are in milliseconds unless noted.
// Zero values are meaningful only where a field says so; start from
// Default().
type Config struct {
	TickTime  int // base time unit, ms (default 3000)
	InitLimit int // ticks for a follower to connect and sync (default 10)
	SyncLimit int // ticks a follower may lag (default 5)

	DataDir    string // snapshots; myid for ensembles (default "data"), kept as written
	DataLogDir string // transaction log; "" means DataDir (Parse fills it in)

	ClientPort              int    // default 2181; 0 = pick a free port
	ClientPortAddress       string // "" = all interfaces
	SecureClientPort        int    // TLS client port, 0 = off
	SecureClientPortAddress string // "" = all interfaces
	// NoClientPort means there is no plaintext client port: zoo.cfg sets
	// secureClientPort but not clientPort (as ZooKeeper, which then serves
	// TLS only). ClientPort is then ignored.
	NoClientPort bool
	// SSL is the client port's TLS configuration (ssl.go).
	SSL SSL
	// SASL is the SASL login and enforced authentication (sasl.go).
	SASL SASL
	// Quorum is the security of the links between members (quorumsec.go).
	Quorum                  Quorum
	ClientPortListenBacklog int // -1 = OS default

	MinSessionTimeout int // 0 (or -1) = 2*TickTime; see EffectiveMinSessionTimeout
	MaxSessionTimeout int // 0 (or -1) = 20*TickTime; see EffectiveMaxSessionTimeout

	MaxClientCnxns         int // per client IP, default 60, 0 = unlimited
	GlobalOutstandingLimit int // default 1000
	SnapCount              int // default 100000
	// FsyncWarningThresholdMs is fsync.warningthresholdms: a log fsync
	// slower than this is logged and counted (default 1000).
	FsyncWarningThresholdMs int64
	PreAllocSize            int64 // KB, default 65536 (informational)

	AutopurgeSnapRetainCount int // default 3 (values below 3 become 3)
	AutopurgePurgeInterval   int // hours, default 0 = off

	// FourLetterWordWhitelist is 4lw.commands.whitelist split on commas:
	// default ["srvr"]; "*" means every command. See Allowed4LW.
	FourLetterWordWhitelist []string

	AdminEnableServer  bool   // admin.enableServer, default true
	AdminServerAddress string // admin.serverAddress, default "0.0.0.0"
	AdminServerPort    int    // admin.serverPort, default 8080
	AdminCommandURL    string // admin.commandURL, default "/commands"
	AdminIdleTimeout   int    // admin.idleTimeout, default 30000

	MetricsHTTPPort          int    // metricsProvider.httpPort, default 7000
	MetricsProviderClassName string // metricsProvider.className

	ExtendedTypesEnabled          bool // TTL nodes (default false)
	ClientTCPKeepAlive            bool // TCP keep-alive probes on client connections, with the OS's timings (default false)
	ReconfigEnabled               bool // default false
	StandaloneEnabled             bool // default true
	ForceSync                     bool // forceSync=yes|no, default yes
	LocalSessionsEnabled          bool // default false
	LocalSessionsUpgradingEnabled bool // default false
	ReadOnlyModeEnabled           bool // readonlymode.enabled, default false
	SkipACL                       bool // zookeeper.skipACL=yes|no, default no
	AuditEnable                   bool // audit.enable: one audit log line per write, default false
	// LogStore (zkserverd's logStore) selects the raft log store: "wal" or
	// "boltdb". Empty (the default) keeps the store a data directory was
	// created with, and uses wal for a new one.
	LogStore string
	// WALSegmentSizeBytes (zkserverd's wal.segmentSizeBytes) is the size
	// of each segment file of the wal log store, reserved on disk when the
	// segment is created: 0 means DefaultWALSegmentSize; otherwise
	// between MinWALSegmentSize and MaxWALSegmentSize.
	WALSegmentSizeBytes int
	// MemoryLimitBytes (zkserverd's memory.limitBytes) is the memory the
	// process may use, in bytes: zkserverd sets the Go runtime's soft limit
	// to it (unless GOMEMLIMIT is set in the environment) and refuses writes
	// that would grow the tree once the live heap nears it
	// (docs/operations.md, "Memory"). 0, the default, sets neither; the
	// limit then follows GOMEMLIMIT or the container's cgroup limit.
	MemoryLimitBytes int64

	// JuteMaxBuffer is the largest packet, default 0xfffff. ZooKeeper reads
	// it only from the JVM property; zkserverd also takes jute.maxbuffer
	// from zoo.cfg.
	JuteMaxBuffer int
	// SessionlessCnxnTimeout is how long a connection may stay without a
	// ConnectRequest (zookeeper.nio.sessionlessCnxnTimeout, default 10000).
	SessionlessCnxnTimeout int
	// LargeRequestMaxBytes bounds the bytes of large requests (see
	// LargeRequestThreshold) in flight: while one more would exceed it,
	// connections stop reading (largeRequestMaxBytes, default 100 MiB).
	LargeRequestMaxBytes int
	// LargeRequestThreshold is the size above which a request counts as
	// large (largeRequestThreshold). Default 1024; -1 turns the bound off,
	// which is ZooKeeper's default.
	LargeRequestThreshold int

	ContainerCheckIntervalMs        int            // znode.container.checkIntervalMs, default 60000
	ContainerMaxPerMinute           int            // znode.container.maxPerMinute, default 10000
	ContainerMaxNeverUsedIntervalMs int64          // znode.container.maxNeverUsedIntervalMs, default 0 = never
	SuperDigest                     string         // DigestAuthenticationProvider.superDigest, "user:base64sha1"
	AuthProviders                   map[int]string // authProvider.N = class name

	ElectionAlg                 int    // only 3 is valid (default 3)
	PeerType                    string // "participant" (default) or "observer"
	SyncEnabled                 bool   // observers log txns, default true
	QuorumListenOnAllIPs        bool   // default false
	ConnectToLearnerMasterLimit int    // ticks, default 0
	ObserverMasterPort          int    // 0 = off
	DynamicConfigFile           string // dynamicConfigFile
	// ConfigVersion is the membership version ("version" key, hex), shown
	// by `conf` as "version=<hex>".
	ConfigVersion int64

	Servers []Server // server.N lines, sorted by ID
	// Join (zkserverd's `join=true`) starts a member that is not part of the
	// ensemble yet: it does not bootstrap, and waits to be added by reconfig.
	Join bool
	// ForceNewEnsemble (`forceNewEnsemble=true`, or --force-new-ensemble)
	// lets an empty member bootstrap a new ensemble although some listed
	// members do not answer; docs/operations.md says when.
	ForceNewEnsemble bool
	// DigestIntervalMs (`digest.intervalMs`) is how often the leader has
	// the members compare tree digests while writes happen; 0: 2000.
	DigestIntervalMs int
	MyID             int64 // this member's id, from dataDir/myid (see Load, LoadMyID)

	// Extra holds every key that is accepted but not interpreted, and every
	// unknown key, as written in the file.
	Extra map[string]string
}

// The wal log store's segment size (wal.segmentSizeBytes): raft-wal's own
// default, as large as ZooKeeper's preallocated log files (preAllocSize);
// at least 1 MiB (each segment is one more file and one more rotation);
// at most 1 GiB (raft-wal's limit is 4 GiB).
const (
	DefaultWALSegmentSize = 64 << 20
	MinWALSegmentSize     = 1 << 20
	MaxWALSegmentSize     = 1 << 30
)

// MinMemoryLimit is the smallest memory.limitBytes accepted (other than 0):
// below it the server's own working set would leave nothing for the tree.
const MinMemoryLimit = 16 << 20

// DefaultMetricsProviderClassName is ZooKeeper's default metrics provider.
const DefaultMetricsProviderClassName = "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"

// Default returns the configuration of a standalone server with
// ZooKeeper's defaults, listening on 2181 with its data under "data".
func Default() Config {
	return Config{
		TickTime:                 3000,
		InitLimit:                10,
		SyncLimit:                5,
		DataDir:                  "data",
		ClientPort:               2181,
		ClientPortListenBacklog:  -1,
		MaxClientCnxns:           60,
		GlobalOutstandingLimit:   1000,
		SnapCount:                100000,
		FsyncWarningThresholdMs:  1000,
		PreAllocSize:             65536,
		AutopurgeSnapRetainCount: 3,
		FourLetterWordWhitelist:  []string{"srvr"},
		AdminEnableServer:        true,
		AdminServerAddress:       "0.0.0.0",
		AdminServerPort:          8080,
		AdminCommandURL:          "/commands",
		AdminIdleTimeout:         30000,
		MetricsHTTPPort:          7000,
		MetricsProviderClassName: DefaultMetricsProviderClassName,
		StandaloneEnabled:        true,
		ForceSync:                true,
		JuteMaxBuffer:            0xfffff,
		SessionlessCnxnTimeout:   10000,
		LargeRequestMaxBytes:     100 << 20,
		LargeRequestThreshold:    1024,
		ContainerCheckIntervalMs: 60000,
		ContainerMaxPerMinute:    10000,
		AuthProviders:            map[int]string{},
		ElectionAlg:              3,
		PeerType:                 "participant",
		SyncEnabled:              true,
		SSL:                      DefaultSSL(),
		SASL:                     DefaultSASL(),
		Quorum:                   DefaultQuorum(),
		Extra:                    map[string]string{},
	}
}

// EffectiveMinSessionTimeout returns the lower bound for negotiated session
// timeouts: MinSessionTimeout, or 2*TickTime when that is 0 or -1.
func (c Config) EffectiveMinSessionTimeout() int {
	if c.MinSessionTimeout == 0 || c.MinSessionTimeout == -1 {
		return 2 * c.TickTime
	}
	return c.MinSessionTimeout
}

// EffectiveMaxSessionTimeout returns the upper bound for negotiated session
// timeouts: MaxSessionTimeout, or 20*TickTime when that is 0 or -1.
func (c Config) EffectiveMaxSessionTimeout() int {
	if c.MaxSessionTimeout == 0 || c.MaxSessionTimeout == -1 {
		return 20 * c.TickTime
	}
	return c.MaxSessionTimeout
}

// EffectiveDataLogDir returns DataLogDir, or DataDir when it is empty.
func (c Config) EffectiveDataLogDir() string {
	if c.DataLogDir == "" {
		return c.DataDir
	}
	return c.DataLogDir
}

// Known4LW reports whether cmd is a four-letter word ZooKeeper 3.8/3.9
// knows (the set "*" in the whitelist expands to).
func Known4LW(cmd string) bool {
	switch cmd {
	case "conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk",
		"srst", "srvr", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash":
		return true
	}
	return false
}

// Allowed4LW reports whether the four-letter word cmd may run: it is
// whitelisted (or the whitelist has "*" and cmd is known), or it is srvr
// (always allowed), or it is isro and read-only mode is enabled.
func (c Config) Allowed4LW(cmd string) bool {
	if cmd == "srvr" || (cmd == "isro" && c.ReadOnlyModeEnabled) {
		return true
	}
	for _, w := range c.FourLetterWordWhitelist {
		if w == cmd || (w == "*" && Known4LW(cmd)) {
			return true
		}
	}
	return false
}

// Participants returns the number of non-observer servers.
func (c Config) Participants() int {
	n := 0
	for _, s := range c.Servers {
		if !s.Observer {
			n++
		}
	}
	return n
}

// Distributed reports whether the configuration describes an ensemble
// rather than a standalone server: more than one participant, or any
// server line with standaloneEnabled=false. (ZooKeeper ignores a single
// server line when standaloneEnabled is true.)
func (c Config) Distributed() bool {
	return c.Participants() > 1 || (!c.StandaloneEnabled && len(c.Servers) > 0)
}

// Self returns the server line whose ID is MyID.
func (c Config) Self() (Server, bool) {
	for _, s := range c.Servers {
		if s.ID == c.MyID {
			return s, true
		}
	}
	return Server{}, false
}

// ClientAddr returns the host:port the client listener binds: this
// member's server line client address when it has one (as ZooKeeper
// prefers it), else ClientPortAddress:ClientPort. An empty host means all
// interfaces.
func (c Config) ClientAddr() string {
	if s, ok := c.Self(); ok && len(c.Servers) > 0 && s.ClientPort != 0 {
		host := s.ClientAddress
		if host == "0.0.0.0" {
			host = ""
		}
		return net.JoinHostPort(host, strconv.Itoa(s.ClientPort))
	}
	return net.JoinHostPort(c.ClientPortAddress, strconv.Itoa(c.ClientPort))
}

// SecureClientAddr returns the host:port the TLS client listener binds:
// SecureClientPortAddress:SecureClientPort ("" host = all interfaces).
func (c Config) SecureClientAddr() string {
	return net.JoinHostPort(c.SecureClientPortAddress, strconv.Itoa(c.SecureClientPort))
}
