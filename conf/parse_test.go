package conf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parseString parses a config held in a string.
func parseString(t *testing.T, text string) (Config, []string, error) {
	t.Helper()
	return Parse(strings.NewReader(text))
}

// parseLines parses lines as one zoo.cfg and fails the test on an error
// or a warning.
func parseLines(t *testing.T, lines []string) Config {
	t.Helper()
	c, warnings, err := parseString(t, strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings %q", warnings)
	}
	return c
}

// withZookeeperPrefix writes each key of lines as its system property
// name, with the "zookeeper." prefix.
func withZookeeperPrefix(lines []string) []string {
	prefixed := make([]string, len(lines))
	for i, l := range lines {
		prefixed[i] = "zookeeper." + l
	}
	return prefixed
}

// defaults is Default() as Parse returns it for an empty file.
func defaults() Config {
	c := Default()
	c.DataLogDir = c.DataDir
	return c
}

func TestParseEmptyIsDefault(t *testing.T) {
	c, warnings, err := parseString(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings = %q", warnings)
	}
	if !reflect.DeepEqual(c, defaults()) {
		t.Fatalf("Parse(\"\") = %+v\nwant %+v", c, defaults())
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestDefaultValues(t *testing.T) {
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"TickTime", c.TickTime, 3000},
		{"InitLimit", c.InitLimit, 10},
		{"SyncLimit", c.SyncLimit, 5},
		{"ClientPort", c.ClientPort, 2181},
		{"DataDir", c.DataDir, "data"},
		{"EffectiveDataLogDir", c.EffectiveDataLogDir(), "data"},
		{"MaxClientCnxns", c.MaxClientCnxns, 60},
		{"GlobalOutstandingLimit", c.GlobalOutstandingLimit, 1000},
		{"SnapCount", c.SnapCount, 100000},
		{"PreAllocSize", c.PreAllocSize, int64(65536)},
		{"AutopurgeSnapRetainCount", c.AutopurgeSnapRetainCount, 3},
		{"Whitelist", c.FourLetterWordWhitelist, []string{"srvr"}},
		{"AdminEnableServer", c.AdminEnableServer, true},
		{"AdminServerPort", c.AdminServerPort, 8080},
		{"AdminCommandURL", c.AdminCommandURL, "/commands"},
		{"AdminIdleTimeout", c.AdminIdleTimeout, 30000},
		{"MetricsHTTPPort", c.MetricsHTTPPort, 7000},
		{"StandaloneEnabled", c.StandaloneEnabled, true},
		{"ForceSync", c.ForceSync, true},
		{"JuteMaxBuffer", c.JuteMaxBuffer, 0xfffff},
		{"SessionlessCnxnTimeout", c.SessionlessCnxnTimeout, 10000},
		{"ContainerCheckIntervalMs", c.ContainerCheckIntervalMs, 60000},
		{"ClientPortListenBacklog", c.ClientPortListenBacklog, -1},
		{"ElectionAlg", c.ElectionAlg, 3},
		{"EffectiveMin", c.EffectiveMinSessionTimeout(), 6000},
		{"EffectiveMax", c.EffectiveMaxSessionTimeout(), 60000},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestParseKeys(t *testing.T) {
	tests := []struct {
		in   string
		want func(c *Config)
	}{
		{"tickTime=2000", func(c *Config) { c.TickTime = 2000 }},
		{"initLimit=20", func(c *Config) { c.InitLimit = 20 }},
		{"syncLimit=2", func(c *Config) { c.SyncLimit = 2 }},
		{"dataDir=/d", func(c *Config) { c.DataDir, c.DataLogDir = "/d", "/d" }},
		{"dataDir=rel/d", func(c *Config) { c.DataDir, c.DataLogDir = "rel/d", "rel/d" }},
		{"dataLogDir=/l", func(c *Config) { c.DataLogDir = "/l" }},
		{"clientPort=0", func(c *Config) { c.ClientPort = 0 }},
		{"clientPortAddress=::1", func(c *Config) { c.ClientPortAddress = "::1" }},
		{"secureClientPort=2281", func(c *Config) { c.SecureClientPort, c.NoClientPort = 2281, true }},
		{"secureClientPortAddress=h", func(c *Config) { c.SecureClientPortAddress = "h" }},
		{"clientPortListenBacklog=50", func(c *Config) { c.ClientPortListenBacklog = 50 }},
		{"minSessionTimeout=100", func(c *Config) { c.MinSessionTimeout = 100 }},
		{"maxSessionTimeout=+100000", func(c *Config) { c.MaxSessionTimeout = 100000 }},
		{"maxClientCnxns=0", func(c *Config) { c.MaxClientCnxns = 0 }},
		{"globalOutstandingLimit=10", func(c *Config) { c.GlobalOutstandingLimit = 10 }},
		{"snapCount=2", func(c *Config) { c.SnapCount = 2 }},
		{"zookeeper.snapCount=3", func(c *Config) { c.SnapCount = 3 }},
		{"preAllocSize=4294967296", func(c *Config) { c.PreAllocSize = 1 << 32 }},
		{"autopurge.snapRetainCount=10", func(c *Config) { c.AutopurgeSnapRetainCount = 10 }},
		{"autopurge.purgeInterval=1", func(c *Config) { c.AutopurgePurgeInterval = 1 }},
		{"4lw.commands.whitelist=*", func(c *Config) { c.FourLetterWordWhitelist = []string{"*"} }},
		{"zookeeper.4lw.commands.whitelist=stat, ruok", func(c *Config) { c.FourLetterWordWhitelist = []string{"stat", "ruok"} }},
		{"4lw.commands.whitelist=", func(c *Config) { c.FourLetterWordWhitelist = []string{} }},
		{"admin.enableServer=false", func(c *Config) { c.AdminEnableServer = false }},
		{"zookeeper.admin.enableServer=False", func(c *Config) { c.AdminEnableServer = false }},
		{"admin.serverAddress=127.0.0.1", func(c *Config) { c.AdminServerAddress = "127.0.0.1" }},
		{"admin.serverPort=0", func(c *Config) { c.AdminServerPort = 0 }},
		{"admin.commandURL=/x", func(c *Config) { c.AdminCommandURL = "/x" }},
		{"admin.idleTimeout=5", func(c *Config) { c.AdminIdleTimeout = 5 }},
		{"metricsProvider.httpPort=7070", func(c *Config) { c.MetricsHTTPPort = 7070 }},
		{"metricsProvider.className=a.B", func(c *Config) { c.MetricsProviderClassName = "a.B" }},
		{"extendedTypesEnabled=true", func(c *Config) { c.ExtendedTypesEnabled = true }},
		{"zookeeper.extendedTypesEnabled=TRUE", func(c *Config) { c.ExtendedTypesEnabled = true }},
		{"clientTcpKeepAlive=true", func(c *Config) { c.ClientTCPKeepAlive = true }},
		{"reconfigEnabled=true", func(c *Config) { c.ReconfigEnabled = true }},
		{"standaloneEnabled=false", func(c *Config) { c.StandaloneEnabled = false }},
		{"forceSync=no", func(c *Config) { c.ForceSync = false }},
		{"zookeeper.forceSync=YES", func(c *Config) { c.ForceSync = true }},
		{"localSessionsEnabled=true", func(c *Config) { c.LocalSessionsEnabled = true }},
		{"localSessionsUpgradingEnabled=true", func(c *Config) { c.LocalSessionsUpgradingEnabled = true }},
		{"readonlymode.enabled=true", func(c *Config) { c.ReadOnlyModeEnabled = true }},
		{"skipACL=yes", func(c *Config) { c.SkipACL = true }},
		{"fsync.warningthresholdms=50", func(c *Config) { c.FsyncWarningThresholdMs = 50 }},
		{"zookeeper.fsync.warningthresholdms=20", func(c *Config) { c.FsyncWarningThresholdMs = 20 }},
		{"jute.maxbuffer=4194304", func(c *Config) { c.JuteMaxBuffer = 4194304 }},
		{"jute.maxbuffer=0xfff", func(c *Config) { c.JuteMaxBuffer = 0xfff }},
		{"jute.maxbuffer=#10", func(c *Config) { c.JuteMaxBuffer = 16 }},
		{"jute.maxbuffer=010", func(c *Config) { c.JuteMaxBuffer = 8 }},
		{"zookeeper.jute.maxbuffer=7", func(c *Config) { c.JuteMaxBuffer = 7 }},
		{"zookeeper.nio.sessionlessCnxnTimeout=500", func(c *Config) { c.SessionlessCnxnTimeout = 500 }},
		{"nio.sessionlessCnxnTimeout=501", func(c *Config) { c.SessionlessCnxnTimeout = 501 }},
		{"largeRequestMaxBytes=2097152", func(c *Config) { c.LargeRequestMaxBytes = 2097152 }},
		{"wal.segmentSizeBytes=4194304", func(c *Config) { c.WALSegmentSizeBytes = 4 << 20 }},
		{"memory.limitBytes=4294967296", func(c *Config) { c.MemoryLimitBytes = 4 << 30 }},
		{"zookeeper.largeRequestThreshold=-1", func(c *Config) { c.LargeRequestThreshold = -1 }},
		{"znode.container.checkIntervalMs=100", func(c *Config) { c.ContainerCheckIntervalMs = 100 }},
		{"zookeeper.znode.container.checkIntervalMs=101", func(c *Config) { c.ContainerCheckIntervalMs = 101 }},
		{"znode.container.maxPerMinute=5", func(c *Config) { c.ContainerMaxPerMinute = 5 }},
		{"znode.container.maxNeverUsedIntervalMs=9", func(c *Config) { c.ContainerMaxNeverUsedIntervalMs = 9 }},
		{"zookeeper.DigestAuthenticationProvider.superDigest=s:x", func(c *Config) { c.SuperDigest = "s:x" }},
		{"DigestAuthenticationProvider.superDigest=s:y", func(c *Config) { c.SuperDigest = "s:y" }},
		{"authProvider.1=a.B", func(c *Config) { c.AuthProviders[1] = "a.B" }},
		{"zookeeper.authProvider.7=c.D", func(c *Config) { c.AuthProviders[7] = "c.D" }},
		{"electionAlg=3", func(c *Config) {}},
		{"peerType=OBSERVER", func(c *Config) { c.PeerType = "observer" }},
		{"syncEnabled=false", func(c *Config) { c.SyncEnabled = false }},
		{"quorumListenOnAllIPs=true", func(c *Config) { c.QuorumListenOnAllIPs = true }},
		{"connectToLearnerMasterLimit=3", func(c *Config) { c.ConnectToLearnerMasterLimit = 3 }},
		{"observerMasterPort=2191", func(c *Config) { c.ObserverMasterPort = 2191 }},
		{"dynamicConfigFile=/x.dynamic", func(c *Config) { c.DynamicConfigFile = "/x.dynamic" }},
		{"version=100000000", func(c *Config) { c.ConfigVersion = 0x100000000 }},
		{"sslQuorum=true", func(c *Config) { c.Quorum.SSL = true }},
		{"metricsProvider.exportJvmInfo=false", func(c *Config) { c.Extra["metricsProvider.exportJvmInfo"] = "false" }},
		{"zookeeper.ssl.keyStore.location=/k", func(c *Config) { c.SSL.KeyStore.Location = "/k" }},
		{"zookeeper.ssl.quorum.keyStore.location=/k", func(c *Config) { c.Quorum.TLS.KeyStore.Location = "/k" }},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, warnings, err := parseString(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != 0 {
				t.Fatalf("warnings = %q", warnings)
			}
			want := defaults()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, want)
			}
		})
	}
}

func TestParseSyntax(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(c *Config)
	}{
		{"comments and blanks", "# tickTime=1\n! tickTime=2\n\n   \n  # indented\ntickTime=4000\n",
			func(c *Config) { c.TickTime = 4000 }},
		{"colon separator", "tickTime: 4000", func(c *Config) { c.TickTime = 4000 }},
		{"space separator", "tickTime 4000", func(c *Config) { c.TickTime = 4000 }},
		{"whitespace around", "  tickTime   =   4000   ", func(c *Config) { c.TickTime = 4000 }},
		{"tabs", "\ttickTime\t=\t4000\t", func(c *Config) { c.TickTime = 4000 }},
		{"CRLF", "tickTime=4000\r\nsyncLimit=3\r\n", func(c *Config) { c.TickTime, c.SyncLimit = 4000, 3 }},
		{"CR only", "tickTime=4000\rsyncLimit=3", func(c *Config) { c.TickTime, c.SyncLimit = 4000, 3 }},
		{"later duplicate wins", "tickTime=1000\ntickTime=2000\n", func(c *Config) { c.TickTime = 2000 }},
		{"continuation", "dataDir=/var/\\\n    lib/zk\n", func(c *Config) { c.DataDir, c.DataLogDir = "/var/lib/zk", "/var/lib/zk" }},
		{"escaped backslash is not continuation", "dataDir=c:\\\\\ntickTime=5", func(c *Config) {
			c.DataDir, c.DataLogDir, c.TickTime = `c:\`, `c:\`, 5
		}},
		{"escapes", `dataDir=/a\u0062c\ d\=e`, func(c *Config) { c.DataDir, c.DataLogDir = "/abc d=e", "/abc d=e" }},
		{"escaped separator in key", "a\\=b=c", func(c *Config) { c.Extra["a=b"] = "c" }},
		{"value keeps inner equals", "DigestAuthenticationProvider.superDigest=super:abc=", func(c *Config) {
			c.SuperDigest = "super:abc="
		}},
		{"empty value", "clientPortAddress=", func(c *Config) {}},
		{"key only", "clientPortAddress", func(c *Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := parseString(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, want)
			}
		})
	}
}

func TestParseBadValues(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{"tickTime=abc", `conf: tickTime: "abc" is not an integer`},
		{"tickTime=2000 # comment", `conf: tickTime: "2000 # comment" is not an integer`},
		{"clientPort=99999999999", `conf: clientPort: "99999999999" is out of range`},
		{"initLimit=1.5", `conf: initLimit: "1.5" is not an integer`},
		{"snapCount=0xZZ", `conf: snapCount: "0xZZ" is not an integer`},
		{"zookeeper.snapCount=1_000", `conf: zookeeper.snapCount: "1_000" is not an integer`},
		{"jute.maxbuffer=", `conf: jute.maxbuffer: "" is not an integer`},
		{"preAllocSize=--1", `conf: preAllocSize: "--1" is not an integer`},
		{"wal.segmentSizeBytes=4MiB", `conf: wal.segmentSizeBytes: "4MiB" is not an integer`},
		{"memory.limitBytes=2g", `conf: memory.limitBytes: "2g" is not an integer`},
		{"standaloneEnabled=yes", `conf: standaloneEnabled: "yes" is not a boolean (true or false)`},
		{"zookeeper.extendedTypesEnabled=1", `conf: zookeeper.extendedTypesEnabled: "1" is not a boolean (true or false)`},
		{"clientTcpKeepAlive=yes", `conf: clientTcpKeepAlive: "yes" is not a boolean (true or false)`},
		{"forceSync=maybe", `conf: forceSync: "maybe" is not yes or no`},
		{"peerType=leader", `conf: peerType: "leader" is not participant or observer`},
		{"version=xyz", `conf: version: "xyz" is not a hexadecimal integer`},
		{"server.x=h:1:2", `conf: server.x: "h:1:2" does not name a numeric server id`},
		{"dataDir=\\u12", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, _, err := parseString(t, tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %q, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseWarnings(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		wantWarnings []string
		check        func(c Config) bool
	}{
		{"unknown key kept", "fooBar=1\ntickTime=2000",
			[]string{`conf: unknown key "fooBar" (kept, not interpreted)`},
			func(c Config) bool { return c.Extra["fooBar"] == "1" && c.TickTime == 2000 }},
		{"prefixed first-class key is unknown", "zookeeper.tickTime=5",
			[]string{`conf: unknown key "zookeeper.tickTime" (kept, not interpreted)`},
			func(c Config) bool { return c.TickTime == 3000 }},
		{"snapRetainCount raised to 3", "autopurge.snapRetainCount=1",
			[]string{"conf: autopurge.snapRetainCount: 1 is below the minimum; using 3"},
			func(c Config) bool { return c.AutopurgeSnapRetainCount == 3 }},
		{"named auth provider", "authProvider.sasl=a.B",
			[]string{`conf: authProvider.sasl: provider name "sasl" is not a number (kept, not interpreted)`},
			func(c Config) bool { return c.Extra["authProvider.sasl"] == "a.B" && len(c.AuthProviders) == 0 }},
		{"single server line", "server.1=h:1:2",
			[]string{"conf: only one participant listed with standaloneEnabled=true; running standalone"},
			func(c Config) bool { return len(c.Servers) == 1 && !c.Distributed() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := parseString(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(warnings, tt.wantWarnings) {
				t.Fatalf("warnings = %q, want %q", warnings, tt.wantWarnings)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestParseFullFile(t *testing.T) {
	_, _, err := Load(filepath.Join("testdata", "full.cfg"))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		// full.cfg is an ensemble (standaloneEnabled=false) whose dataDir
		// has no myid: Load must say so.
		t.Fatalf("Load(full.cfg) error = %v, want a missing myid", err)
	}
	f, err := os.Open(filepath.Join("testdata", "full.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, warnings, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	quorumSSL := DefaultQuorum()
	quorumSSL.SSL = true
	if len(warnings) != 0 {
		t.Fatalf("warnings = %q", warnings)
	}
	want := Config{
		TickTime: 1000, InitLimit: 7, SyncLimit: 4,
		DataDir: "/var/lib/zk", DataLogDir: "/var/log/zk",
		ClientPort: 2182, ClientPortAddress: "127.0.0.1",
		SecureClientPort: 2281, SecureClientPortAddress: "127.0.0.2",
		SSL:                     DefaultSSL(),
		SASL:                    DefaultSASL(),
		ClientPortListenBacklog: 128,
		MinSessionTimeout:       3000, MaxSessionTimeout: 90000,
		MaxClientCnxns: 0, GlobalOutstandingLimit: 500, SnapCount: 5000, PreAllocSize: 1024,
		FsyncWarningThresholdMs:  250,
		AutopurgeSnapRetainCount: 5, AutopurgePurgeInterval: 24,
		FourLetterWordWhitelist: []string{"ruok", "mntr", "conf"},
		AdminEnableServer:       false, AdminServerAddress: "127.0.0.1", AdminServerPort: 9090,
		AdminCommandURL: "/cmd", AdminIdleTimeout: 1000,
		MetricsHTTPPort:               7001,
		MetricsProviderClassName:      "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
		ExtendedTypesEnabled:          true,
		ReconfigEnabled:               true,
		StandaloneEnabled:             false,
		ForceSync:                     false,
		LocalSessionsEnabled:          true,
		LocalSessionsUpgradingEnabled: true,
		ReadOnlyModeEnabled:           true,
		SkipACL:                       true,
		JuteMaxBuffer:                 0x200000,
		SessionlessCnxnTimeout:        5000,
		LargeRequestMaxBytes:          100 << 20,
		LargeRequestThreshold:         1024,
		ContainerCheckIntervalMs:      1000, ContainerMaxPerMinute: 100, ContainerMaxNeverUsedIntervalMs: 60000,
		SuperDigest: "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		AuthProviders: map[int]string{
			1: "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
			2: "com.example.Auth",
		},
		ElectionAlg: 3, PeerType: "observer", SyncEnabled: false, QuorumListenOnAllIPs: true,
		ConnectToLearnerMasterLimit: 9, ObserverMasterPort: 2191,
		DynamicConfigFile: "/etc/zk/zoo.cfg.dynamic", ConfigVersion: 0x1a,
		Servers: []Server{
			{ID: 1, Host: "zk1.example.com", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181},
			{ID: 2, Host: "2001:db8::2", PeerPort: 2888, ElectionPort: 3888, Observer: true, ClientAddress: "::1", ClientPort: 2181},
		},
		Quorum: quorumSSL,
		Extra:  map[string]string{"metricsProvider.exportJvmInfo": "false"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Parse(full.cfg)\n got %+v\nwant %+v", c, want)
	}
}

func TestParseServers(t *testing.T) {
	tests := []struct {
		value string
		want  Server
	}{
		{"zk1:2888:3888", Server{Host: "zk1", PeerPort: 2888, ElectionPort: 3888}},
		{"zk1:2888:3888:participant", Server{Host: "zk1", PeerPort: 2888, ElectionPort: 3888}},
		{"zk1:2888:3888:OBSERVER", Server{Host: "zk1", PeerPort: 2888, ElectionPort: 3888, Observer: true}},
		{"zk1:2888:3888;2181", Server{Host: "zk1", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181}},
		{"zk1:2888:3888:observer;0.0.0.0:2181", Server{Host: "zk1", PeerPort: 2888, ElectionPort: 3888, Observer: true, ClientAddress: "0.0.0.0", ClientPort: 2181}},
		{"10.0.0.1:2888:3888;10.0.0.1:2181", Server{Host: "10.0.0.1", PeerPort: 2888, ElectionPort: 3888, ClientAddress: "10.0.0.1", ClientPort: 2181}},
		{"[::1]:2888:3888", Server{Host: "::1", PeerPort: 2888, ElectionPort: 3888}},
		{"[fe80::1%eth0]:2888:3888:participant;[::]:2181", Server{Host: "fe80::1%eth0", PeerPort: 2888, ElectionPort: 3888, ClientAddress: "::", ClientPort: 2181}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c, _, err := parseString(t, "server.7="+tt.value)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.ID = 7
			if len(c.Servers) != 1 || c.Servers[0] != want {
				t.Fatalf("Servers = %+v, want [%+v]", c.Servers, want)
			}
		})
	}
}

func TestParseServerErrors(t *testing.T) {
	tests := []struct {
		value   string
		wantErr string
	}{
		{"zk1:2888", "is not host:quorumPort:electionPort"},
		{"zk1", "is not host:quorumPort:electionPort"},
		{":2888:3888", "is not host:quorumPort:electionPort"},
		{"zk1:2888:3888:observer:x", "is not host:quorumPort:electionPort"},
		{"zk1:a:3888", `has a bad quorum port "a"`},
		{"zk1:2888:b", `has a bad election port "b"`},
		{"zk1:2888:2888", "uses the same port for quorum and election"},
		{"zk1:2888:3888:leader", `has an unknown peer type "leader"`},
		{"zk1:2888:3888;2181;2182", "is not host:quorumPort:electionPort"},
		{"zk1:2888:3888;h:2181:1", "is not host:quorumPort:electionPort"},
		{"zk1:2888:3888;h:x", `has a bad client port "x"`},
		{"zk1:2888:3888;0", `has a bad client port "0"`},
		{"[::1:2888:3888", "is not host:quorumPort:electionPort"},
		{"a:1:2|b:3:4", "lists several addresses"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			_, _, err := parseString(t, "server.1="+tt.value)
			if err == nil {
				t.Fatal("no error")
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != "server.1" || ke.Value != tt.value {
				t.Fatalf("error %v is not a KeyError for server.1=%q", err, tt.value)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %q, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestServerString(t *testing.T) {
	tests := []struct {
		s    Server
		want string
	}{
		{Server{Host: "127.0.0.1", PeerPort: 1, ElectionPort: 2}, "127.0.0.1:1:2:participant"},
		{Server{Host: "h", PeerPort: 1, ElectionPort: 2, Observer: true}, "h:1:2:observer"},
		{Server{Host: "h", PeerPort: 1, ElectionPort: 2, ClientPort: 3}, "h:1:2:participant;0.0.0.0:3"},
		{Server{Host: "::1", PeerPort: 1, ElectionPort: 2, ClientAddress: "::2", ClientPort: 3}, "[::1]:1:2:participant;[::2]:3"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestLoadMyID(t *testing.T) {
	tests := []struct {
		name    string
		content *string
		want    int64
		wantErr error
	}{
		{"plain", ptr("3"), 3, nil},
		{"newline", ptr("2\n"), 2, nil},
		{"spaces and CRLF", ptr("  12 \r\nignored\n"), 12, nil},
		{"not a number", ptr("abc\n"), 0, ErrInvalid},
		{"empty", ptr(""), 0, ErrInvalid},
		{"missing", nil, 0, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.content != nil {
				if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LoadMyID(dir)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("LoadMyID = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestLoadReadsMyID(t *testing.T) {
	dir := t.TempDir()
	cfg := "dataDir=" + dir + "\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\nserver.3=127.0.0.3:2888:3888\n"
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load without myid: error = %v, want not-exist", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.MyID != 2 {
		t.Fatalf("MyID = %d, want 2", c.MyID)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if self, ok := c.Self(); !ok || self.Host != "127.0.0.2" {
		t.Fatalf("Self = %+v, %v", self, ok)
	}
	if _, _, err := Load(filepath.Join(dir, "missing.cfg")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load(missing) error = %v", err)
	}
}

func TestLoadStandaloneSingleServerNeedsNoMyID(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte("dataDir="+dir+"\nserver.1=127.0.0.1:2888:3888\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.MyID != 0 || c.Distributed() {
		t.Fatalf("MyID = %d, Distributed = %v", c.MyID, c.Distributed())
	}
}

// TestLoadErrorsNameFileAndKey: every error Load reports names the file
// and the key, and a file without dataDir is refused, as ZooKeeper refuses
// it, with the misspelled key named when there is one.
func TestLoadErrorsNameFileAndKey(t *testing.T) {
	tests := []struct {
		name string
		text string // "{dir}" is replaced by a directory
		want string // the error after "conf: <path>: "
	}{
		{"bad value", "dataDir={dir}\ntickTime=abc\n", `tickTime: "abc" is not an integer`},
		{"no dataDir", "tickTime=2000\nclientPort=2181\n", "dataDir is not set: ZooKeeper refuses to start without it"},
		{"misspelled dataDir", "dataDIr={dir}\n", `dataDir is not set (the file sets "dataDIr": did you mean dataDir?)`},
		{"dataDir typo", "dtaDir={dir}\n", `dataDir is not set (the file sets "dtaDir": did you mean dataDir?)`},
		{"dataDir only as a system property is not enough", "tickTime=2000\n", "dataDir is not set"},
		{"bad escape", "dataDir={dir}\nkey=\\u00zz\n", "key:"},
		{"bad myid", "dataDir={dir}\nserver.1=a:1:2\nserver.2=b:1:2\n", "myid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "zoo.cfg")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(tt.text, "{dir}", dir)), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.name == "bad myid" {
				if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := Load(path, Property{Key: "dataDir", Value: dir})
			prefix := "conf: " + path + ": "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v\nwant %q followed by %q", err, prefix, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
		})
	}
}

// TestLoadWithDataDir: a data directory given outside the file (a flag)
// stands for the file's dataDir: the file need not set one, the log
// directory follows it unless the file sets one, and myid is read there.
func TestLoadWithDataDir(t *testing.T) {
	dir, flagDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(flagDir, "myid"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := "server.1=a:1:2\nserver.2=b:1:2\nserver.3=c:1:2\n"
	tests := []struct {
		name, text          string
		wantDir, wantLogDir string
	}{
		{"file without dataDir", servers, flagDir, flagDir},
		{"file with dataDir", "dataDir=/elsewhere\n" + servers, flagDir, flagDir},
		{"file with dataLogDir", "dataLogDir=/log\n" + servers, flagDir, "/log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "zoo.cfg")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, _, err := LoadWithDataDir(path, flagDir)
			if err != nil {
				t.Fatal(err)
			}
			if c.DataDir != tt.wantDir || c.DataLogDir != tt.wantLogDir || c.MyID != 2 {
				t.Errorf("dataDir %q, dataLogDir %q, myid %d; want %q, %q, 2", c.DataDir, c.DataLogDir, c.MyID, tt.wantDir, tt.wantLogDir)
			}
		})
	}
}

// TestLoadWarnsAboutMisspelledKeys: an unknown key close to a known one is
// kept, and its warning names the known key.
func TestLoadWarnsAboutMisspelledKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zoo.cfg")
	text := "dataDir=" + dir + "\ntickTme=2000\nzookeeper.snapcount=10\nssl.keystore.location=/k.p12\nsever.2=a:1:2\nnoSuchThing=1\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`conf: unknown key "tickTme" (kept, not interpreted): did you mean tickTime?`,
		`conf: unknown key "zookeeper.snapcount" (kept, not interpreted): did you mean zookeeper.snapCount?`,
		`conf: unknown key "ssl.keystore.location" (kept, not interpreted): did you mean ssl.keyStore.location?`,
		`conf: unknown key "sever.2" (kept, not interpreted): did you mean server.2?`,
		`conf: unknown key "noSuchThing" (kept, not interpreted)`,
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	if c.TickTime != 3000 || c.Extra["tickTme"] != "2000" {
		t.Errorf("tickTime %d, Extra %v: the misspelled key must be kept, not applied", c.TickTime, c.Extra)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"full.cfg", "leader.cfg", "standalone.cfg"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("a\\\n")
	f.Add("k=\\u00")
	f.Add("server.1=[::1]:1:2;[::2]:3")
	f.Fuzz(func(t *testing.T, text string) {
		c, _, err := Parse(strings.NewReader(text))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		_ = c.Validate() // must not panic
		_ = c.LinesFor(Runtime{})
		_ = c.ClientAddr()
	})
}

func TestParseServerLineAndJoin(t *testing.T) {
	s, err := ParseServerLine("server.4=127.0.0.1:2891:3891:observer;127.0.0.1:2184")
	if err != nil || s.ID != 4 || s.PeerPort != 2891 || s.ElectionPort != 3891 || !s.Observer || s.ClientPort != 2184 {
		t.Fatalf("ParseServerLine = %+v %v", s, err)
	}
	for _, bad := range []string{"server.x=1:2:3", "4=127.0.0.1:1:2", "server.4=nohostports", "server.0=h:1:2"} {
		if _, err := ParseServerLine(bad); err == nil {
			t.Errorf("ParseServerLine(%q) accepted", bad)
		}
	}
	c, _, err := Parse(strings.NewReader("dataDir=/d\njoin=true\n"))
	if err != nil || !c.Join {
		t.Fatalf("join=true: %v %v", c.Join, err)
	}
}
