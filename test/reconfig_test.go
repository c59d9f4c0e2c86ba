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

// TestReconfigRemoveKeepsServing: removing members by reconfig never
// closes the remaining members' doors, although raft's voters shrink a
// moment before /zookeeper/config does; nor does a restart of a remaining
// member, which then lists the replicated configuration's members, not
// its server lines (the voter gate counts participants the way reconcile
// lists them).
func TestReconfigRemoveKeepsServing(t *testing.T) {
	for _, remove := range []int{1, 2} {
		t.Run(fmt.Sprintf("remove=%d", remove), func(t *testing.T) { reconfigRemoveKeepsServing(t, remove) })
	}
}

func reconfigRemoveKeepsServing(t *testing.T, remove int) {
	e := testutil.StartEnsemble(t, ensembleSpec(t, 3, func(c *conf.Config) { c.ReconfigEnabled, c.SkipACL = true, true }))
	lead := e.Leader()
	var leaving []string
	var removed []int
	for k := 1; k <= remove; k++ {
		i := (lead + k) % 3
		removed = append(removed, i)
		leaving = append(leaving, fmt.Sprint(i+1))
	}
	c, events := testutil.Connect(t, e.Addr(lead), 4*time.Second)
	if _, err := c.IncrementalReconfig(nil, leaving, -1); err != nil {
		t.Fatalf("reconfig -remove %v: %v", leaving, err)
	}
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		if !e.Member(lead).Serving() {
			t.Fatalf("the leader stopped serving after reconfig -remove %v", leaving)
		}
		select {
		case ev := <-events:
			if ev.State != zk.StateHasSession {
				t.Fatalf("the leader's client saw %v after reconfig -remove %v", ev.State, leaving)
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, i := range removed {
		e.Stop(i)
	}
	if _, err := c.Create("/after-remove", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a write after reconfig -remove %v: %v", leaving, err)
	}
	c.Close()
	e.Restart(lead)
	again, _ := testutil.Connect(t, e.Addr(lead), 4*time.Second)
	if ok, _, err := again.Exists("/after-remove"); err != nil || !ok {
		t.Fatalf("/after-remove after the remaining leader's restart: %v %v", ok, err)
	}
	if _, err := again.Create("/after-restart", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a write after the restart: %v", err)
	}
}
