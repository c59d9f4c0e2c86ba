package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestConfGolden renders `conf` for the configurations the captured
// samples (testdata/conf.*.txt, from a real ZooKeeper 3.8.0) came from.
func TestConfGolden(t *testing.T) {
	tests := []struct {
		cfg, golden string
		myID        int64
		rt          Runtime
	}{
		{"standalone.cfg", "conf.standalone.txt", 0, Runtime{DataDirSize: 67109337, DataLogSize: 67109337}},
		{"leader.cfg", "conf.leader.txt", 3, Runtime{DataDirSize: 67109477, DataLogSize: 67109477}},
		{"follower.cfg", "conf.follower.txt", 1, Runtime{DataDirSize: 67109477, DataLogSize: 67109477}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c, warnings, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != 0 {
				t.Fatalf("warnings: %q", warnings)
			}
			c.MyID = tt.myID
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ConfText(tt.rt); got != string(want) {
				t.Fatalf("ConfText:\n%s\n---- want:\n%s", got, want)
			}
			wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
			if got := c.LinesFor(tt.rt); !reflect.DeepEqual(got, wantLines) {
				t.Fatalf("LinesFor = %q\nwant %q", got, wantLines)
			}
		})
	}
}

func TestConfRuntimeOverrides(t *testing.T) {
	c := Default()
	c.DataDir, c.DataLogDir = "/d", "/l"
	c.SecureClientPort = 2281
	rt := Runtime{ClientPort: 40000, SecureClientPort: 40001, DataDir: "/snap", DataLogDir: "/log", DataDirSize: 1, DataLogSize: 2}
	want := []string{
		"clientPort=40000", "secureClientPort=40001", "dataDir=/snap", "dataDirSize=1",
		"dataLogDir=/log", "dataLogSize=2", "tickTime=3000", "maxClientCnxns=60",
		"minSessionTimeout=6000", "maxSessionTimeout=60000", "clientPortListenBacklog=-1", "serverId=0",
	}
	if got := c.LinesFor(rt); !reflect.DeepEqual(got, want) {
		t.Fatalf("LinesFor = %q\nwant %q", got, want)
	}
}

func TestConfObserverAndClientSuffix(t *testing.T) {
	c, _, err := parseString(t, "dataDir=/d\ninitLimit=3\nsyncLimit=2\nversion=100000003\n"+
		"server.1=a:11:21\nserver.2=b:12:22;2181\nserver.3=[::1]:13:23:observer;[::1]:2182\n")
	if err != nil {
		t.Fatal(err)
	}
	c.MyID = 3
	lines := c.LinesFor(Runtime{})
	want := []string{
		"serverId=3", "initLimit=3", "syncLimit=2", "electionAlg=3", "electionPort=23", "quorumPort=13",
		"peerType=1", "membership: ", "server.1=a:11:21:participant", "server.2=b:12:22:participant;0.0.0.0:2181",
		"server.3=[::1]:13:23:observer;[::1]:2182", "version=100000003",
	}
	if got := lines[len(lines)-len(want):]; !reflect.DeepEqual(got, want) {
		t.Fatalf("ensemble lines = %q\nwant %q", got, want)
	}
	if text := c.ConfText(Runtime{}); strings.HasSuffix(text, "\n") {
		t.Fatal("ensemble ConfText ends with a newline")
	}
}

func TestLinesReadsDisk(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	for path, size := range map[string]int{
		filepath.Join(dir, "version-2", "snapshot.1"): 100,
		filepath.Join(dir, "raft.db"):                 20,
		filepath.Join(logDir, "log.1"):                7,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := Default()
	c.DataDir, c.DataLogDir = dir, logDir
	lines := c.Lines()
	want := map[string]bool{
		"dataDir=" + filepath.Join(dir, "version-2"): true,
		"dataDirSize=127": true,
		"dataLogDir=" + filepath.Join(logDir, "version-2"): true,
		"dataLogSize=7": true,
	}
	for _, l := range lines {
		delete(want, l)
	}
	if len(want) != 0 {
		t.Fatalf("Lines() = %q, missing %v", lines, want)
	}
	if DirSize(filepath.Join(dir, "nope")) != 0 {
		t.Fatal("DirSize of a missing directory is not 0")
	}
}

func TestRelativeDataDirShownAbsolute(t *testing.T) {
	c := Default() // DataDir "data"
	abs, err := filepath.Abs("data")
	if err != nil {
		t.Fatal(err)
	}
	lines := c.LinesFor(Runtime{})
	if lines[2] != "dataDir="+filepath.Join(abs, "version-2") || lines[4] != "dataLogDir="+filepath.Join(abs, "version-2") {
		t.Fatalf("dir lines = %q, %q", lines[2], lines[4])
	}
}
