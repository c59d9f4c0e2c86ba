package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// fakeMember answers srvr with srvrReply and a connect request with
// connect (nil: it closes the connection), and a closeSession with
// closeCode. It serves until the test ends.
type fakeMember struct {
	srvrReply string
	connect   *jute.ConnectResponse
	closeCode jute.Code
}

// listen starts the member and returns its address.
func (m fakeMember) listen(t *testing.T) string {
	t.Helper()
	return testutil.Serve(t, m.serve)
}

// serve answers one connection: a four-letter word, or a session.
func (m fakeMember) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	head, err := br.Peek(4)
	if err != nil {
		return
	}
	if string(head) == "srvr" {
		io.WriteString(c, m.srvrReply)
		return
	}
	if _, err := jute.ReadFrame(br, 1<<20, nil); err != nil || m.connect == nil {
		return
	}
	c.Write(jute.AppendFrame(nil, m.connect))
	frame, err := jute.ReadFrame(br, 1<<20, nil)
	if err != nil {
		return
	}
	var h jute.RequestHeader
	h.Decode(jute.NewDecoder(frame))
	if h.Type == jute.OpCloseSession {
		c.Write(jute.AppendFrame(nil, &jute.ReplyHeader{Xid: h.Xid, Err: m.closeCode}))
	}
}

// TestHealthcheck: healthy means srvr reports a serving mode and a session
// can be created; a session the member cannot close still counts.
func TestHealthcheck(t *testing.T) {
	const follower = "Zookeeper version: x\nMode: follower\nNode count: 5\n"
	session := &jute.ConnectResponse{TimeOut: 4000, SessionID: 0x42, Passwd: make([]byte, 16)}
	cases := []struct {
		name    string
		member  fakeMember
		wantErr string // "" for healthy
	}{
		{"serving", fakeMember{srvrReply: follower, connect: session}, ""},
		{"close refused", fakeMember{srvrReply: follower, connect: session, closeCode: jute.SessionClosedRequireSaslAuth}, ""},
		{"no quorum or fenced", fakeMember{srvrReply: "This ZooKeeper instance is not currently serving requests\n", connect: session},
			"not currently serving requests"},
		{"read-only", fakeMember{srvrReply: "Mode: read-only\n", connect: session}, `mode "read-only"`},
		{"connect closed", fakeMember{srvrReply: follower}, "srvr says follower, but ops: session probe: no session created"},
		{"session id 0", fakeMember{srvrReply: follower, connect: &jute.ConnectResponse{Passwd: make([]byte, 16)}},
			"the server answered session id 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mode, err := healthcheck(tc.member.listen(t), 2*time.Second)
			switch {
			case tc.wantErr == "" && (err != nil || mode != "follower"):
				t.Fatalf("healthcheck = %q, %v; want follower", mode, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("healthcheck = %q, %v; want an error containing %q", mode, err, tc.wantErr)
			}
		})
	}
}

// TestHealthcheckAgainstServer runs the check against an in-process
// server: it passes and closes its session (the session timeout is too
// long for it to expire meanwhile), and it fails once the server still
// answers srvr but can no longer create sessions (its replicated state is
// closed under it).
func TestHealthcheckAgainstServer(t *testing.T) {
	cfg := testutil.Config(t.TempDir())
	cfg.ForceSync = false
	cfg.MinSessionTimeout = 60000
	cfg.MaxSessionTimeout = 60000
	srv := servertest.Start(t, server.Options{Config: cfg})
	addr := srv.Addr().String()
	if mode, err := healthcheck(addr, 2*time.Second); err != nil || mode != "standalone" {
		t.Fatalf("healthcheck = %q, %v; want standalone", mode, err)
	}
	testutil.Eventually(t, 5*time.Second, "the probe's session to be closed", func() bool {
		return srv.Replica().Sessions().Len() == 0
	})

	srv.Replica().Close()
	if got := testutil.FourLetterLine(addr, "srvr", "Mode: "); got != "standalone" {
		t.Fatalf("srvr Mode %q after the replicated state closed, want standalone", got)
	}
	_, err := healthcheck(addr, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "no session created") {
		t.Fatalf("healthcheck of a server that cannot create sessions: %v", err)
	}
}

// TestHealthcheckAndStatusCommands: both commands take --config and
// --client-port (before, healthcheck --config was an unknown flag), check
// the port the configuration names, and exit non-zero when the member is
// not serving; status prints the port it checked and the Mode line.
func TestHealthcheckAndStatusCommands(t *testing.T) {
	const follower = "Zookeeper version: x\nMode: follower\nNode count: 5\n"
	session := &jute.ConnectResponse{TimeOut: 4000, SessionID: 0x42, Passwd: make([]byte, 16)}
	serving := fakeMember{srvrReply: follower, connect: session}.listen(t)
	noSession := fakeMember{srvrReply: follower}.listen(t)
	_, servingPort, _ := net.SplitHostPort(serving)
	_, noSessionPort, _ := net.SplitHostPort(noSession)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := writeFile(cfg, "dataDir="+dir+"\nclientPortAddress=127.0.0.1\nclientPort="+servingPort+"\n"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		want    string // stdout
		wantErr string
	}{
		{[]string{"healthcheck", "--config", cfg}, "serving: follower\n", ""},
		{[]string{"healthcheck", "--client-port", servingPort}, "serving: follower\n", ""},
		{[]string{"healthcheck", "--config", cfg, "--client-port", noSessionPort}, "", "no session created"},
		{[]string{"status", "--config", cfg},
			"Using config: " + cfg + "\nClient port found: " + servingPort + ". Client address: 127.0.0.1.\nMode: follower\n", ""},
		{[]string{"status", "--client-port", servingPort},
			"Client port found: " + servingPort + ". Client address: 127.0.0.1.\nMode: follower\n", ""},
		{[]string{"status", "--config", cfg, "--client-port", noSessionPort},
			"Using config: " + cfg + "\nClient port found: " + noSessionPort + ". Client address: 127.0.0.1.\n", "no session created"},
		{[]string{"status", "--config", cfg, "--client-port", "70000"}, "", `conf: --client-port: clientPort: "70000" is not a port number`},
		{[]string{"status", "--client-port", "0"}, "", "clientPort is 0"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for _, v := range []string{"ZOO_DATA_DIR", "ZOO_SERVERS", "ZOO_CFG_EXTRA", "SERVER_JVMFLAGS", "JVMFLAGS"} {
				t.Setenv(v, "")
			}
			var out, errOut bytes.Buffer
			cmd := newRootCommand(&out, &errOut)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if out.String() != tc.want {
				t.Errorf("stdout %q, want %q", out.String(), tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
