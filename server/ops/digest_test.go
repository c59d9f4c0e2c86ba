package ops

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/watch"
)

// servingState is a follower serving read-write clients, with the
// replicated state of its fakeReplica.
type servingState struct{ *readOnlyState }

func (servingState) Serving() bool  { return true }
func (servingState) ReadOnly() bool { return false }
func (servingState) Mode() string   { return "follower" }

// digestSurfaces returns operator surfaces over a serving follower whose
// replica has the given digest log, mismatch count and fence.
func digestSurfaces(t *testing.T, r fakeReplica) *Surfaces {
	t.Helper()
	cfg := conf.Default()
	cfg.FourLetterWordWhitelist = []string{"*"}
	r.tree, r.sessions = datatree.New(datatree.Config{}), session.NewTable()
	st := servingState{&readOnlyState{cfg: cfg, watches: watch.NewRegistry(), started: time.Now(),
		dir: t.TempDir(), replica: r}}
	o := New(Options{})
	o.st, o.cfg, o.log = st, cfg, st.Logger()
	return o
}

// fourLetterReply is o's reply to a four-letter word.
func fourLetterReply(o *Surfaces, cmd string) string {
	var b bytes.Buffer
	o.FourLetterWord(cmd, false, strings.NewReader(""), &b)
	return b.String()
}

// TestHashAndDigestMismatches checks hash (four-letter word and
// AdminServer) and the mismatch count in mntr, monitor and /metrics'
// registry, for an empty digest log, a log with records, and a fenced
// member, which answers hash as not serving.
func TestHashAndDigestMismatches(t *testing.T) {
	records := []replication.DigestRecord{
		{Index: 100, Zxid: 0x100000003, Digest: 42},
		{Index: 200, Zxid: 0x20000000a, Digest: 1<<63 + 5}, // a negative Java long
	}
	cases := []struct {
		name      string
		replica   fakeReplica
		hash      string // the four-letter word's reply
		adminHash string // the AdminServer's reply
		count     string // mntr's zk_digest_mismatches_count
	}{
		{name: "fresh", hash: "", count: "0",
			adminHash: "{\n  \"digests\" : [ ],\n  \"command\" : \"hash\",\n  \"error\" : null\n}"},
		{name: "records", replica: fakeReplica{digests: records, mismatches: 3},
			hash:  "100000003: 42\n20000000a: -9223372036854775803\n",
			count: "3",
			adminHash: "{\n  \"digests\" : [ {\n    \"zxid\" : 4294967299,\n    \"digest\" : 42,\n    \"index\" : 100\n" +
				"  }, {\n    \"zxid\" : 8589934602,\n    \"digest\" : -9223372036854775803,\n    \"index\" : 200\n" +
				"  } ],\n  \"command\" : \"hash\",\n  \"error\" : null\n}"},
		{name: "fenced", replica: fakeReplica{digests: records, mismatches: 1, fenced: errors.New("digest differs at index 200")},
			hash: notServing, count: "1",
			adminHash: "{\n  \"command\" : \"hash\",\n  \"error\" : \"" + notServingError + "\"\n}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := digestSurfaces(t, tc.replica)
			if got := fourLetterReply(o, "hash"); got != tc.hash {
				t.Errorf("hash = %q, want %q", got, tc.hash)
			}
			if got := newAdminHandler(o).run("hash", nil); got != tc.adminHash {
				t.Errorf("admin hash =\n%s\nwant\n%s", got, tc.adminHash)
			}
			checkMismatchCount(t, o, tc.count)
		})
	}
}

// checkMismatchCount checks the digest mismatch count where mntr (while
// serving), the AdminServer's monitor and the metrics registry show it.
func checkMismatchCount(t *testing.T, o *Surfaces, want string) {
	t.Helper()
	if o.serving() {
		line := "\nzk_digest_mismatches_count\t" + want + "\n"
		if mntr := fourLetterReply(o, "mntr"); !strings.Contains(mntr, line) {
			t.Errorf("mntr has no %q:\n%s", strings.TrimSpace(line), mntr)
		}
	}
	monitor := decodeJSON(t, "monitor", newAdminHandler(o).run("monitor", nil))
	if got := fmt.Sprint(monitor["digest_mismatches_count"]); got != want {
		t.Errorf("monitor digest_mismatches_count = %v, want %s", got, want)
	}
	if got := gatheredValue(t, o, digestMismatchesMetric); got != want {
		t.Errorf("metric %s = %s, want %s", digestMismatchesMetric, got, want)
	}
}

// gatheredValue registers o's metrics and returns the value of the
// counter name, "" when there is none.
func gatheredValue(t *testing.T, o *Surfaces, name string) string {
	t.Helper()
	if err := o.registerMetrics(); err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	mfs, err := o.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) != 1 {
			continue
		}
		if mf.GetType().String() != "COUNTER" {
			t.Errorf("%s is a %v, want a counter", name, mf.GetType())
		}
		return strconv.FormatFloat(mf.GetMetric()[0].GetCounter().GetValue(), 'f', -1, 64)
	}
	return ""
}

// TestFencedReportsNotServing: a fenced member answers every command that
// needs a serving server as a member without a quorum does, the
// AdminServer's ruok included; the four-letter ruok still says imok, as
// ZooKeeper's does whenever the process runs.
func TestFencedReportsNotServing(t *testing.T) {
	o := digestSurfaces(t, fakeReplica{fenced: errors.New("this member's tree differs from the leader's")})
	words := map[string]string{"srvr": notServing, "stat": notServing, "mntr": notServing, "isro": "null", "ruok": "imok"}
	for cmd, want := range words {
		if got := fourLetterReply(o, cmd); got != want {
			t.Errorf("%s = %q, want %q", cmd, got, want)
		}
	}
	h := newAdminHandler(o)
	for _, cmd := range []string{"ruok", "server_stats", "stats", "is_read_only", "hash", "leader"} {
		if got := decodeJSON(t, cmd, h.run(cmd, nil))["error"]; got != notServingError {
			t.Errorf("admin %s error = %v, want %q", cmd, got, notServingError)
		}
	}
	if got := decodeJSON(t, "monitor", h.run("monitor", nil))["server_state"]; got != "follower" {
		t.Errorf("admin monitor answers while fenced: server_state = %v", got)
	}
}
