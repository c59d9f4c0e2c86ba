package test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
)

// TestEnsembleReconfigAddRemove grows a 3-member ensemble to 4 with an
// incremental reconfig (the new member was started with join=true), checks
// the newcomer serves the data, then removes it again.
func TestEnsembleReconfigAddRemove(t *testing.T) {
	var lines []conf.Server
	for i := 1; i <= 4; i++ {
		lines = append(lines, conf.Server{ID: int64(i), Host: "127.0.0.1", PeerPort: freePort(t), ElectionPort: freePort(t),
			ClientAddress: "127.0.0.1", ClientPort: freePort(t)})
	}
	e := &ensemble{t: t, servers: make([]*server.Server, 4)}
	for i := 0; i < 4; i++ {
		cfg := testConfig(t, t.TempDir())
		cfg.TickTime = 300
		cfg.ReconfigEnabled = true
		cfg.SkipACL = true
		cfg.Servers = lines[:3]
		if i == 3 {
			cfg.Servers, cfg.Join = lines, true
		}
		cfg.MyID = int64(i + 1)
		cfg.ClientPort = lines[i].ClientPort
		e.cfgs = append(e.cfgs, cfg)
	}
	e.launch(3) // member 4 serves only once it has been added
	c, _ := testutil.Connect(t, e.addr(0), 4*time.Second)
	if _, err := c.Create("/before-join", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IncrementalReconfig(nil, nil, 12345); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("reconfig with a stale version: %v, want ErrBadVersion", err)
	}
	_, _, configWatch, err := c.GetW("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	joining := fmt.Sprintf("server.4=%s", lines[3].String())
	if _, err := c.IncrementalReconfig([]string{joining}, nil, -1); err != nil {
		t.Fatalf("reconfig -add: %v", err)
	}
	select {
	case ev := <-configWatch:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/zookeeper/config" {
			t.Fatalf("config watch got %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no NodeDataChanged on /zookeeper/config after reconfig")
	}
	e.waitServing(3)
	newcomer, _ := testutil.Connect(t, e.addr(3), 4*time.Second)
	if data, _, err := newcomer.Get("/before-join"); err != nil || string(data) != "x" {
		t.Fatalf("data on the added member: %q %v", data, err)
	}
	cfgData, _, err := newcomer.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(cfgData), "server.4=127.0.0.1:") || strings.HasSuffix(string(cfgData), "version=0") {
		t.Fatalf("/zookeeper/config after add = %q %v", cfgData, err)
	}
	lead := e.leader()
	testutil.Eventually(t, 10*time.Second, "the leader counting 3 synced followers", func() bool {
		out, _ := testutil.FourLetter(e.addr(lead), "mntr")
		return strings.Contains(out, "zk_synced_followers\t3\n")
	})

	if _, err := c.IncrementalReconfig(nil, []string{"4"}, -1); err != nil {
		t.Fatalf("reconfig -remove: %v", err)
	}
	cfgData, _, _ = c.Get("/zookeeper/config")
	if strings.Contains(string(cfgData), "server.4=") {
		t.Fatalf("/zookeeper/config after remove still lists server 4: %q", cfgData)
	}
	lead = e.leader()
	testutil.Eventually(t, 10*time.Second, "the leader back to 2 followers", func() bool {
		out, _ := testutil.FourLetter(e.addr(lead), "mntr")
		return strings.Contains(out, "zk_learners\t2\n")
	})
}

func TestReconfigDisabledByDefault(t *testing.T) {
	e := startEnsemble(t, 3)
	c, _ := testutil.Connect(t, e.addr(0), 4*time.Second)
	if _, err := c.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrReconfigDisabled) {
		t.Fatalf("reconfig without reconfigEnabled: %v, want ErrReconfigDisabled", err)
	}
}
