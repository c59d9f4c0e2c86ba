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
)

// TestEnsembleReconfigAddRemove grows a 3-member ensemble to 4 with an
// incremental reconfig (the new member was started with join=true), checks
// the newcomer serves the data, then removes it again.
func TestEnsembleReconfigAddRemove(t *testing.T) {
	spec := ensembleSpec(t, 4, func(c *conf.Config) { c.ReconfigEnabled, c.SkipACL = true, true })
	spec.Joining = []int64{4} // member 4 serves only once it has been added
	e := testutil.StartEnsemble(t, spec)
	c, _ := testutil.Connect(t, e.Addr(0), 4*time.Second)
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
	joining := fmt.Sprintf("server.4=%s", e.Line(3).String())
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
	e.WaitServing(3)
	newcomer, _ := testutil.Connect(t, e.Addr(3), 4*time.Second)
	if data, _, err := newcomer.Get("/before-join"); err != nil || string(data) != "x" {
		t.Fatalf("data on the added member: %q %v", data, err)
	}
	cfgData, _, err := newcomer.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(cfgData), "server.4=127.0.0.1:") || strings.HasSuffix(string(cfgData), "version=0") {
		t.Fatalf("/zookeeper/config after add = %q %v", cfgData, err)
	}
	lead := e.Leader()
	testutil.Eventually(t, 10*time.Second, "the leader counting 3 synced followers", func() bool {
		out, _ := testutil.FourLetter(e.Addr(lead), "mntr")
		return strings.Contains(out, "zk_synced_followers\t3\n")
	})

	if _, err := c.IncrementalReconfig(nil, []string{"4"}, -1); err != nil {
		t.Fatalf("reconfig -remove: %v", err)
	}
	cfgData, _, _ = c.Get("/zookeeper/config")
	if strings.Contains(string(cfgData), "server.4=") {
		t.Fatalf("/zookeeper/config after remove still lists server 4: %q", cfgData)
	}
	lead = e.Leader()
	testutil.Eventually(t, 10*time.Second, "the leader back to 2 followers", func() bool {
		out, _ := testutil.FourLetter(e.Addr(lead), "mntr")
		return strings.Contains(out, "zk_learners\t2\n")
	})
}

func TestReconfigDisabledByDefault(t *testing.T) {
	e := startEnsemble(t, 3)
	c, _ := testutil.Connect(t, e.Addr(0), 4*time.Second)
	if _, err := c.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrReconfigDisabled) {
		t.Fatalf("reconfig without reconfigEnabled: %v, want ErrReconfigDisabled", err)
	}
}
