package conf

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ensemble := func(c *Config) {
		c.Servers = []Server{
			{ID: 1, Host: "a", PeerPort: 2888, ElectionPort: 3888},
			{ID: 2, Host: "b", PeerPort: 2888, ElectionPort: 3888},
			{ID: 3, Host: "c", PeerPort: 2888, ElectionPort: 3888},
		}
	}
	tests := []struct {
		name    string
		mutate  func(c *Config)
		wantErr string // "" = valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"client port 0 picks a free port", func(c *Config) { c.ClientPort = 0 }, ""},
		{"admin port 0", func(c *Config) { c.AdminServerPort = 0 }, ""},
		{"timeouts -1 derive", func(c *Config) { c.MinSessionTimeout, c.MaxSessionTimeout = -1, -1 }, ""},
		{"ensemble", ensemble, ""},
		{"ensemble with myid", func(c *Config) { ensemble(c); c.MyID = 2 }, ""},
		{"id 255", func(c *Config) { ensemble(c); c.Servers[2].ID = 255 }, ""},
		{"one participant and standalone disabled", func(c *Config) {
			c.StandaloneEnabled = false
			c.Servers = []Server{{ID: 1, Host: "a", PeerPort: 1, ElectionPort: 2}}
		}, ""},
		{"tickTime 0", func(c *Config) { c.TickTime = 0 }, `conf: tickTime: "0" must be greater than 0`},
		{"tickTime negative", func(c *Config) { c.TickTime = -5 }, `conf: tickTime: "-5" must be greater than 0`},
		{"no dataDir", func(c *Config) { c.DataDir = "" }, `conf: dataDir: "" must be set`},
		{"client port high", func(c *Config) { c.ClientPort = 65536 }, `conf: clientPort: "65536" is not a port number (0..65535)`},
		{"client port negative", func(c *Config) { c.ClientPort = -1 }, `conf: clientPort: "-1"`},
		{"secure port high", func(c *Config) { c.SecureClientPort = 70000 }, `conf: secureClientPort: "70000"`},
		{"admin port high", func(c *Config) { c.AdminServerPort = 70000 }, `conf: admin.serverPort: "70000"`},
		{"metrics port", func(c *Config) { c.MetricsHTTPPort = -2 }, `conf: metricsProvider.httpPort: "-2"`},
		{"min above max", func(c *Config) { c.MinSessionTimeout, c.MaxSessionTimeout = 5000, 4000 },
			`conf: minSessionTimeout: "5000" is larger than maxSessionTimeout (4000)`},
		{"min above derived max", func(c *Config) { c.MinSessionTimeout = 70000 },
			`conf: minSessionTimeout: "70000" is larger than maxSessionTimeout (60000)`},
		{"negative min", func(c *Config) { c.MinSessionTimeout = -2 }, `conf: minSessionTimeout: "-2" must not be negative`},
		{"max overflows int32", func(c *Config) { c.TickTime = 1 << 28 }, `conf: maxSessionTimeout: "5368709120" does not fit in 32 bits`},
		{"maxClientCnxns", func(c *Config) { c.MaxClientCnxns = -1 }, `conf: maxClientCnxns: "-1" must not be negative`},
		{"snapCount", func(c *Config) { c.SnapCount = 1 }, `conf: snapCount: "1" must be at least 2`},
		{"jute.maxbuffer", func(c *Config) { c.JuteMaxBuffer = 0 }, `conf: jute.maxbuffer: "0" must be greater than 0`},
		{"globalOutstandingLimit", func(c *Config) { c.GlobalOutstandingLimit = 0 }, `conf: globalOutstandingLimit: "0"`},
		{"preAllocSize", func(c *Config) { c.PreAllocSize = 0 }, `conf: preAllocSize: "0"`},
		{"snapRetainCount", func(c *Config) { c.AutopurgeSnapRetainCount = 2 }, `conf: autopurge.snapRetainCount: "2" must be at least 3`},
		{"purgeInterval", func(c *Config) { c.AutopurgePurgeInterval = -1 }, `conf: autopurge.purgeInterval: "-1"`},
		{"largeRequestMaxBytes", func(c *Config) { c.LargeRequestMaxBytes = 0 }, `conf: largeRequestMaxBytes: "0" must be greater than 0`},
		{"wal.segmentSizeBytes too small", func(c *Config) { c.WALSegmentSizeBytes = 65536 },
			`conf: wal.segmentSizeBytes: "65536" must be 0 (the default, 64 MiB) or between 1048576 (1 MiB) and 1073741824 (1 GiB)`},
		{"wal.segmentSizeBytes too large", func(c *Config) { c.WALSegmentSizeBytes = 2 << 30 }, `conf: wal.segmentSizeBytes: "2147483648" must be 0 (the default, 64 MiB) or between`},
		{"memory.limitBytes too small", func(c *Config) { c.MemoryLimitBytes = 1 << 20 },
			`conf: memory.limitBytes: "1048576" must be 0 (no limit of its own) or at least 16777216 (16 MiB)`},
		{"memory.limitBytes negative", func(c *Config) { c.MemoryLimitBytes = -1 }, `conf: memory.limitBytes: "-1" must be 0`},
		{"largeRequestThreshold", func(c *Config) { c.LargeRequestThreshold = -2 }, `conf: largeRequestThreshold: "-2" must be -1 or more`},
		{"sessionless timeout", func(c *Config) { c.SessionlessCnxnTimeout = 0 }, `conf: nio.sessionlessCnxnTimeout: "0"`},
		{"container interval", func(c *Config) { c.ContainerCheckIntervalMs = 0 }, `conf: znode.container.checkIntervalMs: "0"`},
		{"electionAlg", func(c *Config) { c.ElectionAlg = 1 }, `conf: electionAlg: "1" is not supported (only 3 is)`},
		{"server id 0", func(c *Config) { ensemble(c); c.Servers[0].ID = 0 }, `conf: server.0: "a:2888:3888:participant" has server id 0 outside 1..255`},
		{"server id 256", func(c *Config) { ensemble(c); c.Servers[2].ID = 256 }, `has server id 256 outside 1..255`},
		{"server id 255 with extended types", func(c *Config) {
			ensemble(c)
			c.Servers[2].ID = 255
			c.ExtendedTypesEnabled = true
		}, `has server id 255 outside 1..254`},
		{"duplicate server id", func(c *Config) { ensemble(c); c.Servers[1].ID = 1 }, `conf: server.1: "b:2888:3888:participant" repeats server id 1`},
		{"server port 0", func(c *Config) { ensemble(c); c.Servers[0].PeerPort = 0 }, `conf: server.1: "0" is not a port number (1..65535)`},
		{"server client port high", func(c *Config) { ensemble(c); c.Servers[0].ClientPort = 1 << 20 }, `conf: server.1: "1048576"`},
		{"only observers", func(c *Config) {
			ensemble(c)
			for i := range c.Servers {
				c.Servers[i].Observer = true
			}
		}, "lists only observers"},
		{"observers without quorum", func(c *Config) {
			ensemble(c)
			c.Servers[1].Observer, c.Servers[2].Observer = true, true
		}, "lists observers but a single participant"},
		{"ensemble needs initLimit", func(c *Config) { ensemble(c); c.InitLimit = 0 }, `conf: initLimit: "0" must be greater than 0 for an ensemble`},
		{"ensemble needs syncLimit", func(c *Config) { ensemble(c); c.SyncLimit = 0 }, `conf: syncLimit: "0" must be greater than 0 for an ensemble`},
		{"myid not listed", func(c *Config) { ensemble(c); c.MyID = 9 }, `conf: myid: "9" is not listed in any server.N line`},
		{"bad peer type", func(c *Config) { c.PeerType = "x" }, `conf: peerType: "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.wantErr)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not match ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.TickTime, c.SnapCount, c.MaxClientCnxns = 0, 0, -1
	err := c.Validate()
	for _, key := range []string{"tickTime", "snapCount", "maxClientCnxns"} {
		if err == nil || !strings.Contains(err.Error(), "conf: "+key+":") {
			t.Errorf("Validate() = %v, missing %s", err, key)
		}
	}
}

func TestEffectiveTimeouts(t *testing.T) {
	tests := []struct {
		tick, min, max   int
		wantMin, wantMax int
	}{
		{2000, 0, 0, 4000, 40000},
		{2000, -1, -1, 4000, 40000},
		{2000, 1000, 0, 1000, 40000},
		{2000, 0, 100000, 4000, 100000},
		{3000, 0, 0, 6000, 60000},
	}
	for _, tt := range tests {
		c := Config{TickTime: tt.tick, MinSessionTimeout: tt.min, MaxSessionTimeout: tt.max}
		if got := c.EffectiveMinSessionTimeout(); got != tt.wantMin {
			t.Errorf("tick %d min %d: EffectiveMin = %d, want %d", tt.tick, tt.min, got, tt.wantMin)
		}
		if got := c.EffectiveMaxSessionTimeout(); got != tt.wantMax {
			t.Errorf("tick %d max %d: EffectiveMax = %d, want %d", tt.tick, tt.max, got, tt.wantMax)
		}
	}
}

func TestAllowed4LW(t *testing.T) {
	tests := []struct {
		name      string
		whitelist []string
		readOnly  bool
		allowed   []string
		denied    []string
	}{
		{"default", []string{"srvr"}, false, []string{"srvr"}, []string{"ruok", "stat", "mntr", "isro", "conf"}},
		{"empty list still allows srvr", []string{}, false, []string{"srvr"}, []string{"ruok"}},
		{"list", []string{"ruok", "mntr"}, false, []string{"ruok", "mntr", "srvr"}, []string{"stat", "conf"}},
		{"star", []string{"*"}, false,
			[]string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk", "srst", "srvr", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash"},
			[]string{"abcd", ""}},
		{"read-only adds isro", []string{"srvr"}, true, []string{"isro", "srvr"}, []string{"ruok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.FourLetterWordWhitelist, c.ReadOnlyModeEnabled = tt.whitelist, tt.readOnly
			for _, cmd := range tt.allowed {
				if !c.Allowed4LW(cmd) {
					t.Errorf("Allowed4LW(%q) = false", cmd)
				}
			}
			for _, cmd := range tt.denied {
				if c.Allowed4LW(cmd) {
					t.Errorf("Allowed4LW(%q) = true", cmd)
				}
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	tests := []struct {
		name string
		cfg  string
		myID int64
		want string
	}{
		{"default", "", 0, ":2181"},
		{"address and port", "clientPortAddress=127.0.0.1\nclientPort=2200", 0, "127.0.0.1:2200"},
		{"ipv6", "clientPortAddress=::1\nclientPort=2200", 0, "[::1]:2200"},
		{"own server line wins", "clientPort=2200\nserver.1=a:1:2;10.0.0.1:3000\nserver.2=b:1:2;10.0.0.2:3000", 2, "10.0.0.2:3000"},
		{"own server line port only", "server.1=a:1:2;3000\nserver.2=b:1:2;3001", 1, ":3000"},
		{"own server line without client part", "clientPort=2200\nserver.1=a:1:2\nserver.2=b:1:2", 1, ":2200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := parseString(t, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.MyID = tt.myID
			if got := c.ClientAddr(); got != tt.want {
				t.Fatalf("ClientAddr() = %q, want %q", got, tt.want)
			}
		})
	}
}
