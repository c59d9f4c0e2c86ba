package ops

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// adminPost sends a POST command with an Authorization header (none when
// auth is "") and returns the status and the decoded reply.
func adminPost(t *testing.T, s *testServer, command, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.AdminAddr().String()+"/commands/"+command, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", command, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", command, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return resp.StatusCode, map[string]any{"body": string(b)}
	}
	return resp.StatusCode, decodeJSON(t, command, string(b))
}

// TestShedConnectionsCommand runs shed_connections on a standalone server
// whose root znode only the digest user admin may change: the refusals
// ZooKeeper 3.10 answers (no or bad credentials, a bad body), then a
// shed of every connection, after which the clients come back with their
// sessions.
func TestShedConnectionsCommand(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	admin := opsClient(t, s)
	if _, err := admin.SetACL("/", zk.DigestACL(zk.PermAll, "admin", "secret"), -1); err != nil {
		t.Fatalf("set root ACL: %v", err)
	}
	const ok = "digest admin:secret"
	cases := []struct {
		name, command, auth, body string
		status                    int
		err                       string // the reply's error; "" for none
	}{
		{"no credentials", "shed_connections", "", `{"percentage": 0}`, 401, "Auth info is missing for the command"},
		{"unknown scheme", "shed_connections", "nosuch x", `{"percentage": 0}`, 401, "Not authenticated"},
		{"too many parts", "shed_connections", "digest admin:secret extra", `{"percentage": 0}`, 401, "Not authenticated"},
		{"no permission on /", "shed_connections", "digest bob:pw", `{"percentage": 0}`, 403, "Not authorized"},
		{"no body", "shed", ok, ``, 400, "Request body is required"},
		{"empty object", "shed", ok, `{}`, 400, "Missing required field: percentage"},
		{"other field", "shed", ok, `{"other": 25}`, 400, "Missing required field: percentage"},
		{"malformed", "shed", ok, `{"percentage": }`, 400, "Invalid JSON or failed to read request body"},
		{"over 100", "shed", ok, `{"percentage": 101}`, 400, "Percentage must be between 0 and 100"},
		{"zero", "shed_connections", ok, `{"percentage": 0}`, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, reply := adminPost(t, s, tc.command, tc.auth, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, reply)
			}
			got, _ := reply["error"].(string)
			if (tc.err == "") != (got == "") || !strings.HasPrefix(got, tc.err) {
				t.Fatalf("error %q, want %q", got, tc.err)
			}
			if reply["command"] != "shed_connections" {
				t.Fatalf("command %v, want the primary name", reply["command"])
			}
		})
	}
	if status, _, _ := httpDo(t, http.MethodGet, "http://"+s.AdminAddr().String()+"/commands/shed"); status != http.StatusMethodNotAllowed {
		t.Fatalf("GET shed: %d, want 405", status)
	}

	// Every connection is shed; each client reconnects to its session.
	c, events := testutil.Connect(t, s.Addr().String(), 10*time.Second)
	sid := c.SessionID()
	admin.Close()
	testutil.Eventually(t, 5*time.Second, "one client connection", func() bool { return len(s.Connections()) == 1 })
	status, reply := adminPost(t, s, "shed_connections", ok, `{"percentage": 100}`)
	if status != 200 || reply["connections_shed"] != json.Number("1") || reply["percentage_requested"] != json.Number("100") {
		t.Fatalf("shed 100%%: %d %v", status, reply)
	}
	testutil.WaitState(t, events, zk.StateDisconnected, 5*time.Second)
	testutil.WaitState(t, events, zk.StateHasSession, 10*time.Second)
	if c.SessionID() != sid {
		t.Fatalf("session 0x%x after the shed, want 0x%x", c.SessionID(), sid)
	}
}

// TestTransferLeadershipCommand runs transfer_leadership in a 3-member
// ensemble: a follower refuses (409), the leader hands over to the member
// named and then to any, writes go on; the probes of a member that lost
// its quorum say live but not ready.
func TestTransferLeadershipCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ensemble")
	}
	e := startOpsEnsemble(t)
	const auth = "digest anyone:x" // the root's ACL is world:anyone
	lead := e.Leader()
	follower := (lead + 1) % 3
	status, reply := adminPost(t, e.Member(follower), "transfer_leadership", auth, "")
	if status != http.StatusConflict || !strings.Contains(reply["error"].(string), "not the leader") {
		t.Fatalf("follower: %d %v", status, reply)
	}
	if status, _ := adminPost(t, e.Member(lead), "leader_transfer", "", ""); status != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d, want 401", status)
	}
	target := (lead + 2) % 3
	cases := []struct {
		name string
		body func(lead int) string
		want func(lead int) int // the new leader's index; -1: any other
	}{
		{"named target", func(int) string { return `{"target": ` + strconv.Itoa(target+1) + `}` }, func(int) int { return target }},
		{"any follower", func(int) string { return "" }, func(int) int { return -1 }},
	}
	c := opsClient(t, e.Member(follower))
	for _, tc := range cases {
		status, reply := adminPost(t, e.Member(lead), "transfer_leadership", auth, tc.body(lead))
		if status != http.StatusOK {
			t.Fatalf("%s: %d %v", tc.name, status, reply)
		}
		got, _ := strconv.Atoi(string(reply["leader"].(json.Number)))
		if want := tc.want(lead); got-1 == lead || (want >= 0 && got-1 != want) {
			t.Fatalf("%s: new leader %d (old %d): %v", tc.name, got, lead+1, reply)
		}
		if now := e.Leader(); now != got-1 {
			t.Fatalf("%s: member %d leads, the command said %d", tc.name, now+1, got)
		}
		lead = got - 1
		testutil.Eventually(t, 10*time.Second, "a write after the transfer", func() bool {
			_, err := c.Create("/after-"+strings.ReplaceAll(tc.name, " ", "-"), nil, 0, zk.WorldACL(zk.PermAll))
			return err == nil || err == zk.ErrNodeExists
		})
	}

	// The member left alone has no quorum: live, not ready.
	alone := (lead + 1) % 3
	for i := range 3 {
		if i != alone {
			e.Stop(i)
		}
	}
	url := "http://" + e.Member(alone).AdminAddr().String()
	testutil.Eventually(t, 15*time.Second, "/ready says 503", func() bool {
		status, _, _ := httpDo(t, http.MethodGet, url+"/ready")
		return status == http.StatusServiceUnavailable
	})
	if status, _, body := httpDo(t, http.MethodGet, url+"/live"); status != http.StatusOK {
		t.Fatalf("/live without quorum: %d %s", status, body)
	}
}
