package ops

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/server"
)

// fencedReplica is a replica whose state disagrees with the ensemble's.
type fencedReplica struct{ server.Replica }

func (fencedReplica) Fenced() error { return errors.New("digest mismatch at index 42") }

// fencedState is a serving server whose replica is fenced.
type fencedState struct{ State }

func (s fencedState) Replica() server.Replica { return fencedReplica{s.State.Replica()} }

// TestProbes asks /live and /ready of a serving standalone server, of the
// same server as it shows while it does not serve or while it is fenced,
// and of a server whose client port is gone (no session can be created):
// /live stays 200, /ready is 200 only while the server serves.
func TestProbes(t *testing.T) {
	s := startOpsServer(t, testOptions{Config: opsConfig(t)})
	url := "http://" + s.AdminAddr().String()
	cases := []struct {
		name  string
		state func() State
		path  string
		want  int
		body  string
	}{
		{"live", nil, "/live", 200, "live"},
		{"ready", nil, "/ready", 200, "ready: standalone"},
		{"not serving, live", func() State { return notServingState{s.Server} }, "/live", 200, "live"},
		{"not serving, not ready", func() State { return notServingState{s.Server} }, "/ready", 503, "not ready: not serving"},
		{"fenced", func() State { return fencedState{s.Server} }, "/ready", 503, "not ready: fenced: digest mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var body string
			if tc.state == nil {
				status, _, body = httpDo(t, http.MethodGet, url+tc.path)
			} else {
				status, body = probeVia(tc.state(), tc.path)
			}
			if status != tc.want || !strings.HasPrefix(body, tc.body) {
				t.Fatalf("%s: %d %q, want %d %q", tc.path, status, body, tc.want, tc.body)
			}
		})
	}
	if status, _, _ := httpDo(t, http.MethodPost, url+"/ready"); status != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ready: %d, want 405", status)
	}
	// A client port where nothing answers: no session, not ready.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	status, body := probeVia(deadPortState{s.Server, ln.Addr()}, "/ready")
	if status != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: cannot create sessions") {
		t.Fatalf("/ready with no client port: %d %q", status, body)
	}
}

// deadPortState is a serving server whose client port is addr.
type deadPortState struct {
	State
	addr net.Addr
}

func (s deadPortState) Addr() net.Addr { return s.addr }

// probeVia asks the AdminServer's handler, built over st, for path.
func probeVia(st State, path string) (int, string) {
	o := &Surfaces{st: st, cfg: st.Config(), log: st.Logger()}
	rec := httptest.NewRecorder()
	o.adminRoutes(newAdminHandler(o)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}
