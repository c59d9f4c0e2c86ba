package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMirrorServeConfig checks that the serving side reads the client
// port's settings from the ensemble's zoo.cfg and the JVM flags as a
// ZooKeeper observer given them would, and overrides what is the mirror's
// own.
func TestMirrorServeConfig(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	ensemble := strings.Join([]string{
		"tickTime=1500", "initLimit=7", "syncLimit=4",
		"dataDir=" + filepath.Join(dir, "voter-data"),
		"secureClientPort=2281",
		"standaloneEnabled=false",
		"extendedTypesEnabled=true",
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
		"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181",
		"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182",
		"server.3=127.0.0.1:2890:3890:participant;127.0.0.1:2183",
		"server.4=127.0.0.1:2891:3891:observer;127.0.0.1:2184",
	}, "\n") + "\n"
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(ensemble), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVER_JVMFLAGS", "-Xmx1g -Djava.security.auth.login.config="+jaas+" -Dzookeeper.superUser=admin -Dreadonlymode.enabled=true")
	t.Setenv("JVMFLAGS", "")
	cfg, err := mirrorServeConfig(mirrorFlags{ensemble: cfgPath, myid: 4, clientAddr: "127.0.0.1:2999"})
	if err != nil {
		t.Fatal(err)
	}
	self, listed := cfg.Self()
	tests := []struct {
		what      string
		got, want any
	}{
		{"myid", cfg.MyID, int64(4)},
		{"client port: --client-addr over the server.N line", cfg.ClientAddr(), "127.0.0.1:2999"},
		{"no TLS client port", cfg.SecureClientPort, 0},
		{"tickTime", cfg.TickTime, 1500},
		{"initLimit", cfg.InitLimit, 7},
		{"syncLimit", cfg.SyncLimit, 4},
		{"TTL nodes", cfg.ExtendedTypesEnabled, true},
		{"sasl provider", cfg.AuthProviders[1], "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
		{"JAAS file from SERVER_JVMFLAGS", cfg.SASL.JAASConfigFile, jaas},
		{"JAAS section", cfg.SASL.ServerSection, "Server"},
		{"super user from SERVER_JVMFLAGS", slices.Contains(cfg.SASL.SuperUsers, "admin"), true},
		{"servers", len(cfg.Servers), 4},
		{"self listed as observer", listed && self.Observer, true},
		{"conf shows the ensemble", cfg.Distributed(), true},
		{"voter's dataDir not used", cfg.DataDir == filepath.Join(dir, "voter-data"), false},
		{"no AdminServer", cfg.AdminEnableServer, false},
		{"no read-only mode", cfg.ReadOnlyModeEnabled, false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.what, tt.got, tt.want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the serving configuration does not validate: %v", err)
	}
}

// TestMirrorServeConfigErrors checks the configurations the mirror
// refuses to serve with.
func TestMirrorServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.cfg")
	bad := filepath.Join(dir, "bad.cfg")
	os.WriteFile(good, []byte("tickTime=2000\nserver.1=127.0.0.1:2888:3888\n"), 0o644)
	os.WriteFile(bad, []byte("tickTime=soon\nserver.1=127.0.0.1:2888:3888\n"), 0o644)
	tests := []struct {
		name, ensemble, clientAddr string
	}{
		{"no port", good, "127.0.0.1"},
		{"bad port", good, "127.0.0.1:70000"},
		{"missing file", filepath.Join(dir, "none.cfg"), "127.0.0.1:2181"},
		{"bad value", bad, "127.0.0.1:2181"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := mirrorServeConfig(mirrorFlags{ensemble: tt.ensemble, myid: 4, clientAddr: tt.clientAddr}); err == nil {
				t.Error("no error")
			}
		})
	}
}
