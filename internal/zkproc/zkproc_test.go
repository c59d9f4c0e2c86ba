package zkproc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/test/ports"
)

// TestEnsembleElectsAndFailsOver launches three voters with
// reconfigEnabled, an outside observer line and a joining member, checks
// the configuration every member got, kills the leader and sees another
// voter take over, then brings it back.
func TestEnsembleElectsAndFailsOver(t *testing.T) {
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e, err := Launch(ctx, Spec{Dir: t.TempDir(), Voters: []int64{1, 2, 3}, Outside: []int64{7}, Joining: []int64{9},
		ReconfigEnabled: true, Ports: ports.ForZkproc()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	// With reconfigEnabled ZooKeeper moves the server lines into a dynamic
	// file and keeps what was written as zoo.cfg.bak.
	cfg, err := os.ReadFile(filepath.Join(e.Member(2).Dir, "zoo.cfg.bak"))
	if err != nil {
		t.Fatal(err)
	}
	for id, line := range e.ServerLines() {
		if !strings.Contains(string(cfg), "server."+itoa(id)+"="+line+"\n") {
			t.Errorf("zoo.cfg of member 2 lacks server.%d=%s:\n%s", id, line, cfg)
		}
	}
	if strings.Contains(string(cfg), "server.9=") || !strings.Contains(string(cfg), "reconfigEnabled=true") {
		t.Errorf("zoo.cfg names the joining member or lacks reconfigEnabled:\n%s", cfg)
	}
	if j := e.Member(9); !j.Joining || j.ClientPort == 0 || len(e.ServerLines()) != 4 {
		t.Errorf("joining member %+v; lines %v", j, e.ServerLines())
	}
	if out := e.Member(7); !out.Outside || out.ClientPort != 0 || !strings.HasSuffix(out.Line(), ":observer") {
		t.Errorf("outside member: %+v line %q", out, out.Line())
	}
	if len(e.ClientAddrs()) != 3 {
		t.Errorf("client addresses %v, want 3", e.ClientAddrs())
	}

	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if e.Running(leader) {
		t.Fatalf("member %d still running after Kill", leader)
	}
	next, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("leader %d was killed but is still reported leading", leader)
	}
	if err := e.Start(leader); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitServing(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if mode, err := e.Mode(leader); err != nil || mode != "follower" {
		t.Errorf("restarted member %d: mode %q, %v; want follower", leader, mode, err)
	}
	if err := e.Start(7); err == nil {
		t.Error("Start of an outside member succeeded")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// countingPorts hands out 100, 101, ... (planMembers binds nothing).
type countingPorts struct{ next int }

func (c *countingPorts) Pick() (int, error) { c.next++; return 100 + c.next, nil }

// TestPlanMembersGivesClientPortsWhereAsked: launched and joining members
// get a client port; outside ones only with OutsideClientPorts, which
// then shows in their line.
func TestPlanMembersGivesClientPortsWhereAsked(t *testing.T) {
	for _, withPorts := range []bool{false, true} {
		ms, err := planMembers(Spec{Dir: "/d", Voters: []int64{2, 1}, Outside: []int64{4}, Joining: []int64{3},
			OutsideClientPorts: withPorts, Ports: &countingPorts{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 4 || ms[0].ID != 1 || ms[3].ID != 4 {
			t.Fatalf("members not in sid order: %+v", ms)
		}
		for _, m := range ms[:3] {
			if m.ClientPort == 0 || m.QuorumPort == 0 || m.ElectionPort == 0 {
				t.Errorf("member %d lacks a port: %+v", m.ID, m)
			}
		}
		out := ms[3]
		hasClient := strings.Contains(out.Line(), ";127.0.0.1:")
		if (out.ClientPort != 0) != withPorts || hasClient != withPorts || !strings.Contains(out.Line(), ":observer") {
			t.Errorf("OutsideClientPorts=%v: outside member's client port %d, line %q", withPorts, out.ClientPort, out.Line())
		}
	}
}

func TestConfigCarriesExtraLines(t *testing.T) {
	dir := t.TempDir()
	e := &Ensemble{spec: Spec{TickTime: 500, InitLimit: 20, SyncLimit: 10,
		ExtraConfig:  []string{"sslQuorum=true"},
		MemberConfig: func(id int64) []string { return []string{"ssl.quorum.keyStore.location=zk" + itoa(id) + ".p12"} }}}
	for _, id := range []int64{1, 2} {
		e.members = append(e.members, &Member{ID: id, QuorumPort: 1, ElectionPort: 2, ClientPort: 3, Dir: filepath.Join(dir, "zk"+itoa(id))})
	}
	for _, m := range e.members {
		if err := e.writeConfig(m); err != nil {
			t.Fatal(err)
		}
		cfg, err := os.ReadFile(filepath.Join(m.Dir, "zoo.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		want := "sslQuorum=true\nssl.quorum.keyStore.location=zk" + itoa(m.ID) + ".p12\n"
		if !strings.HasSuffix(string(cfg), want) {
			t.Errorf("member %d's zoo.cfg does not end with %q:\n%s", m.ID, want, cfg)
		}
	}
}
