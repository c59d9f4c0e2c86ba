package conf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// clusterEnv is the environment of member 2 of a compose cluster, the one
// testdata/env/cluster.cfg was written for.
func clusterEnv() []string {
	return []string{
		"PATH=/usr/bin",
		"ZOO_MY_ID=2",
		"ZOO_SERVERS=server.1=zoo1:2888:3888;2181 server.2=zoo2:2888:3888;2181 server.3=zoo3:2888:3888;2181",
		"ZOO_TICK_TIME=3000",
		"ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok,mntr",
		"ZOO_CFG_EXTRA=metricsProvider.httpPort=7000 snapCount=50000",
	}
}

// imageEnv is what the official image's Dockerfile ENV sets.
func imageEnv() []string {
	return []string{
		"ZOO_CONF_DIR=/conf",
		"ZOO_DATA_DIR=/data",
		"ZOO_DATA_LOG_DIR=/datalog",
		"ZOO_TICK_TIME=2000",
		"ZOO_INIT_LIMIT=5",
		"ZOO_SYNC_LIMIT=2",
		"ZOO_AUTOPURGE_PURGEINTERVAL=0",
		"ZOO_AUTOPURGE_SNAPRETAINCOUNT=3",
		"ZOO_MAX_CLIENT_CNXNS=60",
		"ZOO_STANDALONE_ENABLED=true",
		"ZOO_ADMINSERVER_ENABLED=true",
	}
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "env", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRenderEnvConfigGolden(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		golden  string
	}{
		{"no variables", nil, "default.cfg"},
		{"image ENV only", imageEnv(), "default.cfg"},
		{"empty values are unset", []string{"ZOO_TICK_TIME=", "ZOO_SERVERS=", "ZOO_DATA_DIR=", "ZOO_CFG_EXTRA="}, "default.cfg"},
		{"compose member", clusterEnv(), "cluster.cfg"},
		{"compose member before image ENV", append(clusterEnv(), imageEnv()...), "cluster.cfg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderEnvConfig(tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			if want := readGolden(t, tt.golden); got != want {
				t.Fatalf("RenderEnvConfig =\n%s\nwant (%s)\n%s", got, tt.golden, want)
			}
		})
	}
}

func TestFromEnvDefaults(t *testing.T) {
	c, warnings, err := FromEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "standalone") {
		t.Errorf("warnings = %q, want only the single-participant one", warnings)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"DataDir", c.DataDir, "/data"},
		{"DataLogDir", c.DataLogDir, "/datalog"},
		{"TickTime", c.TickTime, 2000},
		{"InitLimit", c.InitLimit, 5},
		{"SyncLimit", c.SyncLimit, 2},
		{"AutopurgeSnapRetainCount", c.AutopurgeSnapRetainCount, 3},
		{"AutopurgePurgeInterval", c.AutopurgePurgeInterval, 0},
		{"MaxClientCnxns", c.MaxClientCnxns, 60},
		{"StandaloneEnabled", c.StandaloneEnabled, true},
		{"AdminEnableServer", c.AdminEnableServer, true},
		{"FourLetterWordWhitelist", c.FourLetterWordWhitelist, []string{"srvr"}},
		{"Servers", c.Servers, []Server{{ID: 1, Host: "localhost", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181}}},
		{"MyID", c.MyID, int64(1)},
		{"Distributed", c.Distributed(), false},
		{"ClientAddr", c.ClientAddr(), ":2181"},
		{"MinSessionTimeout", c.EffectiveMinSessionTimeout(), 4000},
	}
	for _, ck := range checks {
		if !reflect.DeepEqual(ck.got, ck.want) {
			t.Errorf("%s = %#v, want %#v", ck.name, ck.got, ck.want)
		}
	}
}

// TestFromEnvVariables sets each variable alone and checks the field it
// controls.
func TestFromEnvVariables(t *testing.T) {
	tests := []struct {
		env   string
		field func(Config) any
		want  any
	}{
		{"ZOO_DATA_DIR=/var/zk", func(c Config) any { return c.DataDir }, "/var/zk"},
		{"ZOO_DATA_DIR=/var/zk", func(c Config) any { return c.DataLogDir }, "/datalog"},
		{"ZOO_DATA_LOG_DIR=/fast/log", func(c Config) any { return c.EffectiveDataLogDir() }, "/fast/log"},
		{"ZOO_TICK_TIME=500", func(c Config) any { return c.TickTime }, 500},
		{"ZOO_TICK_TIME=500", func(c Config) any { return c.EffectiveMaxSessionTimeout() }, 10000},
		{"ZOO_INIT_LIMIT=20", func(c Config) any { return c.InitLimit }, 20},
		{"ZOO_SYNC_LIMIT=7", func(c Config) any { return c.SyncLimit }, 7},
		{"ZOO_AUTOPURGE_SNAPRETAINCOUNT=10", func(c Config) any { return c.AutopurgeSnapRetainCount }, 10},
		{"ZOO_AUTOPURGE_SNAPRETAINCOUNT=1", func(c Config) any { return c.AutopurgeSnapRetainCount }, 3},
		{"ZOO_AUTOPURGE_PURGEINTERVAL=24", func(c Config) any { return c.AutopurgePurgeInterval }, 24},
		{"ZOO_MAX_CLIENT_CNXNS=0", func(c Config) any { return c.MaxClientCnxns }, 0},
		{"ZOO_MAX_CLIENT_CNXNS=500", func(c Config) any { return c.MaxClientCnxns }, 500},
		{"ZOO_STANDALONE_ENABLED=false", func(c Config) any { return c.StandaloneEnabled }, false},
		{"ZOO_STANDALONE_ENABLED=false", func(c Config) any { return c.Distributed() }, true},
		{"ZOO_STANDALONE_ENABLED=TRUE", func(c Config) any { return c.StandaloneEnabled }, true},
		{"ZOO_ADMINSERVER_ENABLED=false", func(c Config) any { return c.AdminEnableServer }, false},
		{"ZOO_4LW_COMMANDS_WHITELIST=ruok, mntr ,conf", func(c Config) any { return c.FourLetterWordWhitelist }, []string{"ruok", "mntr", "conf"}},
		{"ZOO_4LW_COMMANDS_WHITELIST=*", func(c Config) any { return c.Allowed4LW("mntr") }, true},
		{"ZOO_4LW_COMMANDS_WHITELIST=", func(c Config) any { return c.FourLetterWordWhitelist }, []string{"srvr"}},
		{"ZOO_MY_ID=1", func(c Config) any { return c.MyID }, int64(1)},
		{"ZOO_MY_ID= 1 ", func(c Config) any { return c.MyID }, int64(1)},
		{"ZOO_CFG_EXTRA=clientPort=2191", func(c Config) any { return c.ClientPort }, 2191},
		{"ZOO_CFG_EXTRA=reconfigEnabled=true", func(c Config) any { return c.ReconfigEnabled }, true},
		{"ZOO_CONF_DIR=/etc/zk", func(c Config) any { return c.TickTime }, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			c, _, err := FromEnv([]string{tt.env})
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.field(c); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestFromEnvServers(t *testing.T) {
	three := func(self string) []Server {
		return []Server{
			{ID: 1, Host: "zoo1", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181},
			{ID: 2, Host: self, PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181},
			{ID: 3, Host: "zoo3", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181},
		}
	}
	tests := []struct {
		name       string
		servers    string
		want       []Server
		clientAddr string
	}{
		{
			name:       "3.5+ form with client port",
			servers:    "server.1=zoo1:2888:3888;2181 server.2=zoo2:2888:3888;2181 server.3=zoo3:2888:3888;2181",
			want:       three("zoo2"),
			clientAddr: ":2181",
		},
		{
			name:       "self as 0.0.0.0, any order, tabs and newlines",
			servers:    "server.3=zoo3:2888:3888;2181\n\tserver.1=zoo1:2888:3888;2181   server.2=0.0.0.0:2888:3888;2181\n",
			want:       three("0.0.0.0"),
			clientAddr: ":2181",
		},
		{
			name:    "3.4 form without client port",
			servers: "server.1=zoo1:2888:3888 server.2=zoo2:2888:3888 server.3=zoo3:2888:3888",
			want: []Server{
				{ID: 1, Host: "zoo1", PeerPort: 2888, ElectionPort: 3888},
				{ID: 2, Host: "zoo2", PeerPort: 2888, ElectionPort: 3888},
				{ID: 3, Host: "zoo3", PeerPort: 2888, ElectionPort: 3888},
			},
			clientAddr: ":2181",
		},
		{
			name:    "roles, client address and IPv6",
			servers: "server.1=[fd00::1]:2888:3888:participant;[fd00::1]:2181 server.2=zoo2:2888:3888:participant;0.0.0.0:2182 server.3=zoo3:2888:3888 server.4=zoo4:2888:3888:observer;2181",
			want: []Server{
				{ID: 1, Host: "fd00::1", PeerPort: 2888, ElectionPort: 3888, ClientAddress: "fd00::1", ClientPort: 2181},
				{ID: 2, Host: "zoo2", PeerPort: 2888, ElectionPort: 3888, ClientAddress: "0.0.0.0", ClientPort: 2182},
				{ID: 3, Host: "zoo3", PeerPort: 2888, ElectionPort: 3888},
				{ID: 4, Host: "zoo4", PeerPort: 2888, ElectionPort: 3888, Observer: true, ClientPort: 2181},
			},
			clientAddr: ":2182",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := FromEnv([]string{"ZOO_MY_ID=2", "ZOO_SERVERS=" + tt.servers})
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != 0 {
				t.Errorf("warnings = %q", warnings)
			}
			if !reflect.DeepEqual(c.Servers, tt.want) {
				t.Errorf("Servers = %+v\nwant %+v", c.Servers, tt.want)
			}
			if !c.Distributed() || c.MyID != 2 {
				t.Errorf("Distributed = %v, MyID = %d; want an ensemble member 2", c.Distributed(), c.MyID)
			}
			if got := c.ClientAddr(); got != tt.clientAddr {
				t.Errorf("ClientAddr = %q, want %q", got, tt.clientAddr)
			}
		})
	}
}

func TestFromEnvCfgExtra(t *testing.T) {
	c, warnings, err := FromEnv([]string{
		"ZOO_TICK_TIME=2000",
		"ZOO_CFG_EXTRA=tickTime=1000 zookeeper.snapCount=5000 metricsProvider.httpPort:7001\tmyCustomKey=x\n4lw.commands.whitelist=conf",
		"ZOO_4LW_COMMANDS_WHITELIST=ruok",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.TickTime != 1000 {
		t.Errorf("TickTime = %d, want 1000 (ZOO_CFG_EXTRA comes last and wins)", c.TickTime)
	}
	if c.SnapCount != 5000 {
		t.Errorf("SnapCount = %d, want 5000", c.SnapCount)
	}
	if c.MetricsHTTPPort != 7001 {
		t.Errorf("MetricsHTTPPort = %d, want 7001", c.MetricsHTTPPort)
	}
	if !reflect.DeepEqual(c.FourLetterWordWhitelist, []string{"conf"}) {
		t.Errorf("whitelist = %q, want [conf]", c.FourLetterWordWhitelist)
	}
	if c.Extra["myCustomKey"] != "x" {
		t.Errorf("Extra = %q, want myCustomKey kept", c.Extra)
	}
	if !containsWith(warnings, `"myCustomKey"`) {
		t.Errorf("warnings = %q, want one about myCustomKey", warnings)
	}
}

func TestFromEnvWarnings(t *testing.T) {
	_, warnings, err := FromEnv([]string{
		"ZOO_LOG4J_PROP=INFO,ROLLINGFILE",
		"ZOO_LOG_DIR=/logs", // read by the command (--log-file)
		"ZOO_PORT=tcp://10.0.0.1:2181",
		"ZOO_TICKTIME=1",
		"ZOO_MY_ID=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ZOO_LOG4J_PROP is ignored", "ZOO_PORT is ignored", "unknown variable ZOO_TICKTIME"} {
		if !containsWith(warnings, want) {
			t.Errorf("warnings = %q, want one containing %q", warnings, want)
		}
	}
	if containsWith(warnings, "ZOO_MY_ID") || containsWith(warnings, "ZOO_LOG_DIR is") || containsWith(warnings, "variable ZOO_LOG_DIR") {
		t.Errorf("warnings = %q mention a variable that is read", warnings)
	}
}

func TestFromEnvFirstOccurrenceWins(t *testing.T) {
	c, _, err := FromEnv([]string{"ZOO_TICK_TIME=1500", "ZOO_TICK_TIME=9000", "NOT_A_PAIR"})
	if err != nil {
		t.Fatal(err)
	}
	if c.TickTime != 1500 {
		t.Fatalf("TickTime = %d, want 1500 (first occurrence, as os.Getenv)", c.TickTime)
	}
}

// TestFromEnvErrors checks that every bad value is an error naming the
// variable it came from.
func TestFromEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		wantVar string
	}{
		{"tick not a number", []string{"ZOO_TICK_TIME=abc"}, "ZOO_TICK_TIME"},
		{"tick zero", []string{"ZOO_TICK_TIME=0"}, "ZOO_TICK_TIME"},
		{"init limit", []string{"ZOO_INIT_LIMIT=5s"}, "ZOO_INIT_LIMIT"},
		{"init limit zero in ensemble", []string{"ZOO_INIT_LIMIT=0", "ZOO_STANDALONE_ENABLED=false"}, "ZOO_INIT_LIMIT"},
		{"sync limit", []string{"ZOO_SYNC_LIMIT=-1"}, "ZOO_SYNC_LIMIT"},
		{"max cnxns", []string{"ZOO_MAX_CLIENT_CNXNS=-5"}, "ZOO_MAX_CLIENT_CNXNS"},
		{"max cnxns text", []string{"ZOO_MAX_CLIENT_CNXNS=many"}, "ZOO_MAX_CLIENT_CNXNS"},
		{"standalone", []string{"ZOO_STANDALONE_ENABLED=yes"}, "ZOO_STANDALONE_ENABLED"},
		{"admin server", []string{"ZOO_ADMINSERVER_ENABLED=on"}, "ZOO_ADMINSERVER_ENABLED"},
		{"purge interval", []string{"ZOO_AUTOPURGE_PURGEINTERVAL=-1"}, "ZOO_AUTOPURGE_PURGEINTERVAL"},
		{"snap retain", []string{"ZOO_AUTOPURGE_SNAPRETAINCOUNT=three"}, "ZOO_AUTOPURGE_SNAPRETAINCOUNT"},
		{"my id text", []string{"ZOO_MY_ID=one"}, "ZOO_MY_ID"},
		{"my id not listed", []string{"ZOO_MY_ID=7"}, "ZOO_MY_ID"},
		{"servers without key", []string{"ZOO_SERVERS=zoo1:2888:3888 zoo2:2888:3888"}, "ZOO_SERVERS"},
		{"servers other key", []string{"ZOO_SERVERS=tickTime=1"}, "ZOO_SERVERS"},
		{"servers id", []string{"ZOO_SERVERS=server.one=zoo1:2888:3888"}, "ZOO_SERVERS"},
		{"servers port", []string{"ZOO_SERVERS=server.1=zoo1:2888:x;2181"}, "ZOO_SERVERS"},
		{"servers id range", []string{"ZOO_MY_ID=300", "ZOO_SERVERS=server.300=a:2888:3888 server.2=b:2888:3888"}, "ZOO_SERVERS"},
		{"servers repeat: the later line wins", []string{"ZOO_MY_ID=3", "ZOO_SERVERS=server.1=a:2888:3888 server.1=b:2888:3888 server.2=c:2888:3888"}, "ZOO_MY_ID"},
		{"servers observers only", []string{"ZOO_SERVERS=server.1=a:2888:3888:observer"}, "ZOO_SERVERS"},
		{"extra value", []string{"ZOO_CFG_EXTRA=clientPort=abc"}, "ZOO_CFG_EXTRA"},
		{"extra overriding tick", []string{"ZOO_CFG_EXTRA=tickTime=-3"}, "ZOO_CFG_EXTRA"},
		{"extra prefixed", []string{"ZOO_CFG_EXTRA=zookeeper.snapCount=1"}, "ZOO_CFG_EXTRA"},
		{"extra bad escape", []string{`ZOO_CFG_EXTRA=dataDir=C:\users`}, "ZOO_CFG_EXTRA"},
		{"extra trailing backslash", []string{`ZOO_CFG_EXTRA=a=b\`}, "ZOO_CFG_EXTRA"},
		{"data dir line break", []string{"ZOO_DATA_DIR=/data\nclientPort=1"}, "ZOO_DATA_DIR"},
		{"data log dir carriage return", []string{"ZOO_DATA_LOG_DIR=/log\r"}, "ZOO_DATA_LOG_DIR"},
		{"tick trailing backslash", []string{`ZOO_TICK_TIME=2000\`}, "ZOO_TICK_TIME"},
		{"whitelist line break", []string{"ZOO_4LW_COMMANDS_WHITELIST=ruok\nmntr"}, "ZOO_4LW_COMMANDS_WHITELIST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := FromEnv(tt.environ)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			var ee *EnvError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v (%T) is not an *EnvError", err, err)
			}
			if ee.Var != tt.wantVar {
				t.Errorf("error names %s, want %s: %v", ee.Var, tt.wantVar, err)
			}
			if !strings.Contains(err.Error(), tt.wantVar) {
				t.Errorf("message %q does not name %s", err, tt.wantVar)
			}
		})
	}
}

func TestEnvErrorMessage(t *testing.T) {
	_, _, err := FromEnv([]string{"ZOO_TICK_TIME=abc"})
	want := `conf: ZOO_TICK_TIME (tickTime): "abc" is not an integer`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestRenderEnvConfigErrors(t *testing.T) {
	for _, environ := range [][]string{
		{"ZOO_SERVERS=zoo1:2888:3888"},
		{"ZOO_INIT_LIMIT=5\n"},
		{`ZOO_CFG_EXTRA=x=\`},
	} {
		if text, err := RenderEnvConfig(environ); err == nil {
			t.Errorf("RenderEnvConfig(%q) = %q, want an error", environ, text)
		}
	}
}

// TestRenderEnvConfigRoundTrip checks that FromEnv is Parse of
// RenderEnvConfig plus ZOO_MY_ID.
func TestRenderEnvConfigRoundTrip(t *testing.T) {
	text, err := RenderEnvConfig(clusterEnv())
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	parsed.MyID = 2
	got, _, err := FromEnv(clusterEnv())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, parsed) {
		t.Fatalf("FromEnv = %+v\nParse(RenderEnvConfig) = %+v", got, parsed)
	}
}

func TestEnvPresent(t *testing.T) {
	tests := []struct {
		environ []string
		want    bool
	}{
		{nil, false},
		{[]string{"PATH=/bin", "HOME=/root"}, false},
		{[]string{"ZOO_MY_ID="}, false},
		{[]string{"ZOO_SERVICE_HOST=10.0.0.1", "ZOO_PORT=tcp://10.0.0.1:2181"}, false},
		{[]string{"ZOO_LOG_LEVEL=INFO"}, false},
		{[]string{"ZOO_LOG_DIR=/logs"}, false},
		{[]string{"ZOO_MY_ID=3"}, true},
		{[]string{"ZOO_SERVERS=server.1=a:1:2"}, true},
		{[]string{"ZOO_CFG_EXTRA=a=b"}, true},
		{[]string{"ZOO_CONF_DIR=/conf"}, true},
		{[]string{"ZOO_4LW_COMMANDS_WHITELIST=*"}, true},
		{[]string{"ZOO_ADMINSERVER_ENABLED=false"}, true},
		{imageEnv(), true},
		{[]string{"zoo_my_id=3"}, false},
	}
	for _, tt := range tests {
		if got := EnvPresent(tt.environ); got != tt.want {
			t.Errorf("EnvPresent(%q) = %v, want %v", tt.environ, got, tt.want)
		}
	}
}

func TestEnvConfigFile(t *testing.T) {
	tests := []struct {
		environ []string
		want    string
	}{
		{nil, "/conf/zoo.cfg"},
		{[]string{"ZOO_CONF_DIR="}, "/conf/zoo.cfg"},
		{[]string{"ZOO_CONF_DIR=/etc/zookeeper/"}, "/etc/zookeeper/zoo.cfg"},
	}
	for _, tt := range tests {
		if got := EnvConfigFile(tt.environ); got != tt.want {
			t.Errorf("EnvConfigFile(%q) = %q, want %q", tt.environ, got, tt.want)
		}
	}
}

func TestLoadEnv(t *testing.T) {
	const servers = "ZOO_SERVERS=server.1=zoo1:2888:3888;2181 server.2=zoo2:2888:3888;2181 server.3=zoo3:2888:3888;2181"
	tests := []struct {
		name      string
		zooCfg    string // "" = no zoo.cfg in ZOO_CONF_DIR
		myidFile  string // "" = no myid file
		extraEnv  []string
		wantTick  int
		wantMyID  int64
		wantWarn  string
		wantErrIs error
	}{
		{name: "rendered from variables", extraEnv: []string{"ZOO_MY_ID=3", "ZOO_TICK_TIME=1234", servers}, wantTick: 1234, wantMyID: 3},
		{name: "myid default", wantTick: 2000, wantMyID: 1},
		{name: "existing myid wins", myidFile: "2\n", extraEnv: []string{"ZOO_MY_ID=3", servers}, wantTick: 2000, wantMyID: 2, wantWarn: "ZOO_MY_ID=3 is ignored"},
		{name: "existing myid agrees", myidFile: "3", extraEnv: []string{"ZOO_MY_ID=3", servers}, wantTick: 2000, wantMyID: 3},
		{name: "existing myid not listed", myidFile: "5", extraEnv: []string{servers}, wantErrIs: ErrInvalid},
		{name: "existing zoo.cfg wins", zooCfg: "tickTime=4000\nserver.1=zoo1:2888:3888;2181\nserver.2=zoo2:2888:3888;2181\nserver.3=zoo3:2888:3888;2181\n",
			extraEnv: []string{"ZOO_MY_ID=2", "ZOO_TICK_TIME=1234"}, wantTick: 4000, wantMyID: 2},
		{name: "existing zoo.cfg and myid", zooCfg: "server.1=a:2888:3888\nserver.2=b:2888:3888\n", myidFile: "1",
			extraEnv: []string{"ZOO_MY_ID=2"}, wantTick: 3000, wantMyID: 1, wantWarn: "is ignored"},
		{name: "standalone zoo.cfg has no id", zooCfg: "clientPort=2182\n", extraEnv: []string{"ZOO_MY_ID=2"}, wantTick: 3000, wantMyID: 0},
		{name: "bad zoo.cfg", zooCfg: "tickTime=x\n", wantErrIs: ErrInvalid},
		{name: "invalid zoo.cfg", zooCfg: "tickTime=0\n", wantErrIs: ErrInvalid},
		{name: "bad myid file", myidFile: "two", wantErrIs: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			confDir, dataDir := t.TempDir(), t.TempDir()
			if tt.zooCfg != "" {
				// A zoo.cfg takes its dataDir from the file, as in the image.
				text := "dataDir=" + dataDir + "\n" + tt.zooCfg
				writeFile(t, filepath.Join(confDir, "zoo.cfg"), text)
			}
			if tt.myidFile != "" {
				writeFile(t, filepath.Join(dataDir, "myid"), tt.myidFile)
			}
			environ := append([]string{"ZOO_CONF_DIR=" + confDir, "ZOO_DATA_DIR=" + dataDir}, tt.extraEnv...)
			c, warnings, err := LoadEnv(environ)
			if tt.wantErrIs != nil {
				if !errors.Is(err, tt.wantErrIs) {
					t.Fatalf("error = %v, want one matching %v", err, tt.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.TickTime != tt.wantTick || c.MyID != tt.wantMyID {
				t.Errorf("TickTime, MyID = %d, %d; want %d, %d", c.TickTime, c.MyID, tt.wantTick, tt.wantMyID)
			}
			if c.DataDir != dataDir {
				t.Errorf("DataDir = %q, want %q", c.DataDir, dataDir)
			}
			if tt.wantWarn != "" && !containsWith(warnings, tt.wantWarn) {
				t.Errorf("warnings = %q, want one containing %q", warnings, tt.wantWarn)
			}
		})
	}
}

func TestLoadEnvMyIDFromVariableNamesIt(t *testing.T) {
	dir := t.TempDir()
	_, _, err := LoadEnv([]string{"ZOO_CONF_DIR=" + dir, "ZOO_DATA_DIR=" + dir, "ZOO_MY_ID=9"})
	var ee *EnvError
	if !errors.As(err, &ee) || ee.Var != "ZOO_MY_ID" {
		t.Fatalf("error = %v, want an *EnvError naming ZOO_MY_ID", err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// containsWith reports whether some element of list contains sub.
func containsWith(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
