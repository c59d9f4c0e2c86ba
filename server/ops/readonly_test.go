package ops

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/watch"
)

// fakeReplica is an ensemble member's replicated state as a State shows
// it; methods the surfaces do not call panic through the nil interface.
type fakeReplica struct {
	server.Replica
	tree       *datatree.Tree
	sessions   *session.Table
	digests    []replication.DigestRecord
	mismatches int64
	fenced     error
}

func (r fakeReplica) Tree() *datatree.Tree                  { return r.tree }
func (r fakeReplica) Sessions() *session.Table              { return r.sessions }
func (r fakeReplica) LastZxid() int64                       { return 0x100000007 }
func (r fakeReplica) Clustered() bool                       { return true }
func (r fakeReplica) IsLeader() bool                        { return false }
func (r fakeReplica) Leader() int64                         { return 0 }
func (r fakeReplica) Role() string                          { return "looking" }
func (r fakeReplica) SlowLogSyncs() int64                   { return 0 }
func (r fakeReplica) ProposalSizes() (last, min, max int64) { return -1, -1, -1 }
func (r fakeReplica) Digests() []replication.DigestRecord   { return r.digests }
func (r fakeReplica) DigestMismatches() int64               { return r.mismatches }
func (r fakeReplica) Fenced() error                         { return r.fenced }

// readOnlyState is a member serving read-only clients without a quorum.
type readOnlyState struct {
	cfg     conf.Config
	replica fakeReplica
	watches *watch.Registry
	started time.Time
	dir     string
}

func (s *readOnlyState) Config() conf.Config                   { return s.cfg }
func (s *readOnlyState) Logger() *slog.Logger                  { return slog.New(slog.DiscardHandler) }
func (s *readOnlyState) Addr() net.Addr                        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2181} }
func (s *readOnlyState) SecureAddr() net.Addr                  { return nil }
func (s *readOnlyState) Started() time.Time                    { return s.started }
func (s *readOnlyState) Serving() bool                         { return false }
func (s *readOnlyState) ReadOnly() bool                        { return true }
func (s *readOnlyState) Mode() string                          { return "read-only" }
func (s *readOnlyState) Replica() server.Replica               { return s.replica }
func (s *readOnlyState) Watches() *watch.Registry              { return s.watches }
func (s *readOnlyState) DataDirs() (snap, txnLog string)       { return s.dir, s.dir }
func (s *readOnlyState) SessionExpiry() map[time.Time][]int64  { return nil }
func (s *readOnlyState) LocalSessionCount() int                { return 1 }
func (s *readOnlyState) Stats() server.Stats                   { return server.Stats{MinResponseSize: -1} }
func (s *readOnlyState) ResetStats()                           {}
func (s *readOnlyState) Connections() []server.ConnectionStats { return nil }
func (s *readOnlyState) ResetConnectionStats()                 {}

// TestReadOnlyReports: the operator surfaces say read-only. isro is
// answered though the whitelist does not name it: read-only mode enables
// it, as in ZooKeeper.
func TestReadOnlyReports(t *testing.T) {
	cfg := conf.Default()
	cfg.ReadOnlyModeEnabled = true
	cfg.FourLetterWordWhitelist = []string{"srvr"}
	cfg.MyID = 1
	cfg.Servers = []conf.Server{{ID: 1, Host: "127.0.0.1", PeerPort: 2888, ElectionPort: 3888}}
	st := &readOnlyState{cfg: cfg, watches: watch.NewRegistry(), started: time.Now(), dir: t.TempDir(),
		replica: fakeReplica{tree: datatree.New(datatree.Config{}), sessions: session.NewTable()}}
	o := New(Options{})
	o.st, o.cfg, o.log = st, cfg, st.Logger()
	ask := func(cmd string) string {
		var b bytes.Buffer
		o.FourLetterWord(cmd, false, strings.NewReader(""), &b)
		return b.String()
	}
	if got := ask("isro"); got != "ro" {
		t.Errorf("isro = %q, want ro", got)
	}
	if srvr := ask("srvr"); !strings.Contains(srvr, "\nMode: read-only\n") {
		t.Errorf("srvr without Mode: read-only:\n%s", srvr)
	}
	mntr := map[string]string{}
	for _, kv := range o.monitorValues() {
		mntr[kv.key] = kv.value
	}
	if mntr["server_state"] != "read-only" || mntr["peer_state"] != "" || mntr["local_sessions"] == "0" {
		t.Errorf("mntr server_state=%q peer_state=%q local_sessions=%q", mntr["server_state"], mntr["peer_state"], mntr["local_sessions"])
	}
	h := newAdminHandler(o)
	admin := []struct{ cmd, key, want string }{
		{"is_read_only", "read_only", "true"},
		{"server_stats", "server_stats.server_state", "read-only"},
		{"zabstate", "zabstate", "election"},
		{"leader", "error", "server is not initialized"},
	}
	for _, a := range admin {
		var v any = decodeJSON(t, a.cmd, h.run(a.cmd, nil))
		for _, k := range strings.Split(a.key, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if got, _ := jsonText(v); got != a.want {
			t.Errorf("%s %s = %v, want %s", a.cmd, a.key, v, a.want)
		}
	}
}

// graceState is a member without a quorum before read-only mode starts.
type graceState struct{ *readOnlyState }

func (graceState) ReadOnly() bool { return false }
func (graceState) Mode() string   { return "looking" }

// TestIsroWithoutQuorum: a member serving neither read-write nor read-only
// answers isro with null.
func TestIsroWithoutQuorum(t *testing.T) {
	cfg := conf.Default()
	cfg.ReadOnlyModeEnabled = true
	st := graceState{&readOnlyState{cfg: cfg}}
	o := New(Options{})
	o.st, o.cfg, o.log = st, cfg, st.Logger()
	var b bytes.Buffer
	o.FourLetterWord("isro", false, strings.NewReader(""), &b)
	if b.String() != "null" {
		t.Errorf("isro during the grace period = %q, want null", b.String())
	}
}

// jsonText renders a decoded JSON scalar as text.
func jsonText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	}
	return "", false
}
