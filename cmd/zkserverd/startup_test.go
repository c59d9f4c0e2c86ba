package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
)

// takenPort holds a loopback port for the rest of the test and returns it.
func takenPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestListenAddrs(t *testing.T) {
	ensemble := func(listenAll bool) conf.Config {
		c := conf.Default()
		c.Servers = []conf.Server{
			{ID: 1, Host: "10.0.0.1", PeerPort: 2888, ElectionPort: 3888},
			{ID: 2, Host: "10.0.0.2", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2182, ClientAddress: "10.0.0.2"},
		}
		c.MyID = 2
		c.QuorumListenOnAllIPs = listenAll
		return c
	}
	tests := []struct {
		name string
		cfg  func() conf.Config
		want []portCheck
	}{
		{"standalone", conf.Default, []portCheck{{"clientPort", ":2181"}}},
		{"picked port", func() conf.Config { c := conf.Default(); c.ClientPort = 0; return c }, nil},
		{"TLS only", func() conf.Config {
			c := conf.Default()
			c.NoClientPort, c.SecureClientPort, c.SecureClientPortAddress = true, 2281, "127.0.0.1"
			return c
		}, []portCheck{{"secureClientPort", "127.0.0.1:2281"}}},
		{"member", func() conf.Config { return ensemble(false) }, []portCheck{
			{"clientPort", "10.0.0.2:2182"}, {"server.2", "10.0.0.2:2888"}, {"server.2", "10.0.0.2:3888"}}},
		{"member on all interfaces", func() conf.Config { return ensemble(true) }, []portCheck{
			{"clientPort", "10.0.0.2:2182"}, {"server.2", ":2888"}, {"server.2", ":3888"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listenAddrs(tt.cfg()); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("listenAddrs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckPorts(t *testing.T) {
	cfg := testutil.Config(t.TempDir())
	cfg.ClientPort = freePort(t)
	if err := checkPorts(cfg, "zoo.cfg"); err != nil {
		t.Fatalf("a free port: %v", err)
	}
	cfg.ClientPort = takenPort(t)
	err := checkPorts(cfg, "zoo.cfg")
	want := "conf: zoo.cfg: clientPort: cannot listen on 127.0.0.1:" + strconv.Itoa(cfg.ClientPort)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("a taken port: %v, want %q...", err, want)
	}
}

func TestNewDirs(t *testing.T) {
	root := t.TempDir()
	existing := filepath.Join(root, "existing")
	if err := os.Mkdir(existing, 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dirs []string
		want []string
	}{
		{"all there", []string{existing, existing}, nil},
		{"one new", []string{existing, filepath.Join(root, "new")}, []string{filepath.Join(root, "new")}},
		{"new parents", []string{filepath.Join(root, "a/b/c")}, []string{filepath.Join(root, "a")}},
		{"shared new parent", []string{filepath.Join(root, "a/data"), filepath.Join(root, "a/log")}, []string{filepath.Join(root, "a")}},
		{"under an existing one", []string{filepath.Join(existing, "x/y")}, []string{filepath.Join(existing, "x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newDirs(tt.dirs...)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("newDirs = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestFailedStartLeavesNoDataDir: a start refused because its client
// port is taken, or because the configuration is invalid, creates no data
// directory.
func TestFailedStartLeavesNoDataDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	dataDir := filepath.Join(dir, "new", "data")
	port := takenPort(t)
	cases := []struct {
		name, cfg, want string
	}{
		{"port taken", "dataDir=" + dataDir + "\nclientPort=" + strconv.Itoa(port) + "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
			"clientPort: cannot listen on 127.0.0.1:" + strconv.Itoa(port)},
		{"no dataDir", "dataDIr=" + dataDir + "\n", "dataDir is not set"},
		{"invalid", "dataDir=" + dataDir + "\ntickTime=0\n", `tickTime: "0" must be greater than 0`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "zoo.cfg")
			if err := writeFile(path, tc.cfg); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			cmd := newRootCommand(&out, &out)
			cmd.SetArgs([]string{"--config", path})
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), "conf: "+path+": "+tc.want) {
				t.Fatalf("start: %v, want an error naming %s and %q", err, path, tc.want)
			}
			for _, d := range []string{filepath.Join(dir, "new"), filepath.Join(dir, "data")} {
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					t.Errorf("%s exists after a failed start (%v)", d, err)
				}
			}
		})
	}
}

// TestStartServerRemovesWhatItCreated: when the server fails after
// server.New (the port was taken after checkPorts), a standalone server's
// new data directories are removed, an ensemble member's kept.
func TestStartServerRemovesWhatItCreated(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "fresh")
		cfg := testutil.Config(dataDir)
		cfg.ForceSync = false
		cfg.AdminEnableServer = false
		cfg.ClientPort = takenPort(t)
		if _, err := startServer(context.Background(), cfg, slog.New(slog.DiscardHandler), nil); err == nil {
			t.Fatal("started on a taken port")
		}
		if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
			t.Fatalf("%s left behind (%v)", dataDir, err)
		}
	})
	t.Run("ensemble member", func(t *testing.T) {
		dataDir := t.TempDir()
		if err := writeFile(filepath.Join(dataDir, "myid"), "1\n"); err != nil {
			t.Fatal(err)
		}
		logDir := filepath.Join(t.TempDir(), "fresh-log")
		cfg := testutil.Config(dataDir)
		cfg.DataLogDir = logDir
		cfg.ForceSync = false
		cfg.AdminEnableServer = false
		cfg.ClientPort = takenPort(t)
		cfg.MyID = 1
		for id := int64(1); id <= 3; id++ {
			cfg.Servers = append(cfg.Servers, conf.Server{ID: id, Host: "127.0.0.1", PeerPort: freePort(t), ElectionPort: freePort(t)})
		}
		if _, err := startServer(context.Background(), cfg, slog.New(slog.DiscardHandler), nil); err == nil {
			t.Fatal("started on a taken port")
		}
		if _, err := os.Stat(logDir); err != nil {
			t.Fatalf("the member's new log directory was removed: %v", err)
		}
	})
}

// TestZeroConfigNeedsNoFile: without --config (and without ZOO_*
// variables) the defaults apply, data in ./data: README's first command.
func TestZeroConfigNeedsNoFile(t *testing.T) {
	for _, v := range []string{"ZOO_DATA_DIR", "ZOO_SERVERS", "ZOO_MY_ID", "ZOO_CFG_EXTRA", "SERVER_JVMFLAGS", "JVMFLAGS"} {
		t.Setenv(v, "")
	}
	cmd := newRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(cmd, runFlags{}, slog.New(slog.DiscardHandler))
	if err != nil || cfg.DataDir != "data" || cfg.ClientPort != 2181 {
		t.Fatalf("zero config: dataDir %q, clientPort %d, %v", cfg.DataDir, cfg.ClientPort, err)
	}
}
