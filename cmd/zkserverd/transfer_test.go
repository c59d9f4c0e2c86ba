package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTransferLeadershipCommand runs transfer-leadership against a fake
// AdminServer: the request it sends (POST to transfer_leadership, the
// target in the body, the Authorization header) and how it reads the
// answers: the new leader, a command error, something that is no reply.
func TestTransferLeadershipCommand(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		env      string
		status   int
		reply    string
		wantBody string
		wantAuth string
		wantOut  string
		wantErr  string
	}{
		{name: "any follower", args: []string{"--auth", "digest admin:secret"}, status: 200,
			reply:    `{"previous_leader": 1, "leader": 3, "command": "transfer_leadership", "error": null}`,
			wantAuth: "digest admin:secret", wantOut: "leader: 3\n"},
		{name: "named target, auth from the environment", args: []string{"--target", "2"}, env: "digest ops:pw", status: 200,
			reply:    `{"leader": 2, "command": "transfer_leadership", "error": null}`,
			wantBody: `{"target": 2}`, wantAuth: "digest ops:pw", wantOut: "leader: 2\n"},
		{name: "not the leader", status: 409,
			reply:   `{"error": "transfer leadership: replication: this member is not the leader (leader: 2)", "command": "transfer_leadership"}`,
			wantErr: "HTTP 409: transfer leadership: replication: this member is not the leader (leader: 2)"},
		{name: "not a reply", status: 404, reply: "404 page not found", wantErr: "HTTP 404, not a command reply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotPath, gotMethod, gotAuth, gotBody string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotPath, gotMethod, gotAuth, gotBody = r.URL.Path, r.Method, r.Header.Get("Authorization"), string(b)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.reply)
			}))
			defer srv.Close()
			t.Setenv("ZKSERVERD_ADMIN_AUTH", tc.env)
			var out bytes.Buffer
			root := newRootCommand(&out, io.Discard)
			root.SetArgs(append([]string{"transfer-leadership", "--admin-url", srv.URL + "/commands", "--timeout", "5s"}, tc.args...))
			err := root.Execute()
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case out.String() != tc.wantOut:
				t.Fatalf("output %q, want %q", out.String(), tc.wantOut)
			}
			if gotMethod != http.MethodPost || gotPath != "/commands/transfer_leadership" {
				t.Fatalf("request %s %s", gotMethod, gotPath)
			}
			if gotBody != tc.wantBody || gotAuth != tc.wantAuth {
				t.Fatalf("body %q auth %q, want %q %q", gotBody, gotAuth, tc.wantBody, tc.wantAuth)
			}
		})
	}
}

// TestTransferLeadershipAdminURL: without --admin-url the command URL
// comes from the configuration, on this machine.
func TestTransferLeadershipAdminURL(t *testing.T) {
	cases := []struct {
		name, cfg, want, wantErr string
	}{
		{name: "defaults", cfg: "dataDir=/tmp/x\nclientPort=2181\n", want: "http://127.0.0.1:8080/commands"},
		{name: "own port and URL", cfg: "dataDir=/tmp/x\nclientPort=2181\nadmin.serverPort=9990\nadmin.commandURL=/admin/\n", want: "http://127.0.0.1:9990/admin"},
		{name: "disabled", cfg: "dataDir=/tmp/x\nclientPort=2181\nadmin.enableServer=false\n", wantErr: "AdminServer is disabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/zoo.cfg"
			if err := writeFile(path, tc.cfg); err != nil {
				t.Fatal(err)
			}
			cmd := newTransferCommand()
			if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
				t.Fatal(err)
			}
			var f runFlags
			f.config = path
			got, err := adminURL(cmd, f)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Fatalf("URL %q, want %q", got, tc.want)
			}
		})
	}
}
