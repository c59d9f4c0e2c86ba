package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkproc"
	"github.com/zkserverd/zkserverd/test/ports"
)

func TestReadEnsembleView(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("zoo.cfg.dynamic", "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\nserver.9=127.0.0.1:2889:3889:observer\nversion=100000000\n")
	tests := []struct {
		name, text string
		voters     int
		observer   bool // server.9 is an observer line
		wantErr    string
	}{
		{"static lines", "tickTime=2000\nserver.1=h1:2888:3888\nserver.2=h2:2888:3888\nserver.9=h9:2888:3888:observer\n", 2, true, ""},
		{"a dynamic file, relative", "tickTime=2000\ndynamicConfigFile=zoo.cfg.dynamic\n", 1, true, ""},
		{"no participant", "tickTime=2000\nserver.9=h9:2888:3888:observer\n", 0, false, "no participant"},
		{"a bad line", "server.1=h1:notaport:3888\n", 0, false, "bad port"},
		{"a missing dynamic file", "dynamicConfigFile=/nonexistent/zoo.cfg.dynamic\n", 0, false, "dynamic configuration"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view, err := readEnsembleView(write(fmt.Sprintf("zoo%d.cfg", i), tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(view.Voters()); got != tt.voters {
				t.Errorf("%d voters, want %d", got, tt.voters)
			}
			if s, ok := view.Server(9); !ok || s.Observer != tt.observer {
				t.Errorf("server.9: %+v %v, want an observer line", s, ok)
			}
		})
	}
}

// zkprocPorts picks cmd/zkserverd's ports for zkproc.
type zkprocPorts struct{ p *ports.Picker }

func (z zkprocPorts) Pick() (int, error) { return z.p.Pick() }

// TestMirrorFollowsAZooKeeperEnsemble runs `zkserverd mirror` against
// Debian's Apache ZooKeeper as 3 voters whose configuration lists it as
// observer 4: it syncs, follows every write to the same zxid and node
// count, says so on /mirror and /ready, and stops cleanly.
func TestMirrorFollowsAZooKeeperEnsemble(t *testing.T) {
	zkproc.Require(t)
	picker := ports.ForCmd()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := zkproc.Launch(ctx, zkproc.Spec{Dir: t.TempDir(), Voters: []int64{1, 2, 3}, Outside: []int64{4}, Ports: zkprocPorts{picker}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	var cfg strings.Builder
	for id, line := range e.ServerLines() {
		fmt.Fprintf(&cfg, "server.%d=%s\n", id, line)
	}
	cfgPath := filepath.Join(t.TempDir(), "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	conn, _, err := zk.Connect(e.ClientAddrs(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/before", []byte("b"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	statusAddr := "127.0.0.1:" + strconv.Itoa(picker.Free(t))
	clientAddr := "127.0.0.1:" + strconv.Itoa(picker.Free(t))
	var stderr bytes.Buffer
	root := newRootCommand(&bytes.Buffer{}, &stderr)
	root.SetArgs([]string{"mirror", "--ensemble", cfgPath, "--myid", "4", "--status-addr", statusAddr, "--client-addr", clientAddr})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(runCtx) }()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mirror returned %v on stop; log:\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("mirror did not stop within 30 s")
		}
	}()

	var last int64
	for i := range 20 {
		path := fmt.Sprintf("/m%d", i)
		if _, err := conn.Create(path, []byte(path), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, st, err := conn.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		last = st.Mzxid
	}
	var s mirrorStatus
	testutil.Eventually(t, 60*time.Second, "the mirror reaches the last write's zxid", func() bool {
		s = getMirrorStatus(t, statusAddr)
		return s.Synced && s.LastZxid == fmt.Sprintf("%#x", last)
	})
	// ZooKeeper's tree: /, /zookeeper, /zookeeper/config, /zookeeper/quota, and the 21 nodes.
	if s.Znodes != 25 || s.Leader == 0 || s.Error != "" {
		t.Fatalf("status %+v, want 25 znodes, a leader and no error", s)
	}
	resp, err := http.Get("http://" + statusAddr + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/ready answered %d while synced", resp.StatusCode)
	}
	// --client-addr: a client reads the mirror's tree there.
	mc, _ := client(t, clientAddr)
	if data, _, err := mc.Get("/m19"); err != nil || string(data) != "/m19" {
		t.Errorf("get /m19 on the mirror's client port: %q %v", data, err)
	}
}

func getMirrorStatus(t *testing.T, addr string) mirrorStatus {
	t.Helper()
	var s mirrorStatus
	resp, err := http.Get("http://" + addr + "/mirror")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("GET /mirror: %v", err)
	}
	return s
}
