package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// TestSASLLoginWithoutSASLEndsWithTheSession: on a server without a SASL
// login, a client that keeps sending sasl requests (kazoo set up for SASL
// loops on the empty answer) gets an empty OK for each, as from ZooKeeper
// 3.8, and, as there, they do not keep its session alive: the session
// expires by its timeout and the connection closes, which the client
// reports as a failed login.
func TestSASLLoginWithoutSASLEndsWithTheSession(t *testing.T) {
	cfg := opsConfig(t)
	cfg.TickTime = 200 // sessions of 400 ms to 4 s
	s := startOpsServer(t, Options{Config: cfg})
	w, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 1000})
	if err != nil || resp.TimeOut != 1000 {
		t.Fatalf("connect: timeout %d, %v", resp.TimeOut, err)
	}
	emptyOK := replyFrame(1, 0, jute.OK, &jute.SASLToken{})[4:]
	start := time.Now()
	for answered := 0; ; answered++ {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the session of a client sending only sasl requests lived 10 s (timeout 1 s, %d answered)", answered)
		}
		w.send(&jute.RequestHeader{Xid: 1, Type: jute.OpSASL}, &jute.SASLToken{Token: []byte("token")})
		frame, err := w.read()
		if err != nil {
			t.Logf("connection closed after %v and %d empty answers", time.Since(start).Round(time.Millisecond), answered)
			break
		}
		if !bytes.Equal(frame, emptyOK) {
			t.Fatalf("sasl request %d: reply %x, want an empty OK %x", answered+1, frame, emptyOK)
		}
	}
	if _, ok := s.node.Sessions().Get(resp.SessionID); ok {
		t.Fatal("the connection closed but the session is still in the table")
	}
}
