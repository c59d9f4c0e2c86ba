package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Ensemble scenarios: the runner starts three members and passes their
// connect string in member order (member N is the N-th address). A line
// "@control VERB [N]" on stdout asks the runner to act on a member (kill,
// stop, cont, restart, leader, wait); it answers one line on stdin, "@ok
// [VALUE]" or "@error ...".

// failover bounds a reconnection that may need an election.
const failover = 40 * time.Second

// controller sends control commands and reads the runner's answers.
type controller struct {
	replies *bufio.Reader
}

// do asks the runner to act on the ensemble and returns the value of its
// "@ok" answer.
func (ct *controller) do(command string) (string, error) {
	fmt.Printf("@control %s\n", command)
	reply, err := ct.replies.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("control %s: %w", command, err)
	}
	reply = strings.TrimSpace(reply)
	if reply != "@ok" && !strings.HasPrefix(reply, "@ok ") {
		return "", fmt.Errorf("control %s: %s", command, reply)
	}
	return strings.TrimSpace(strings.TrimPrefix(reply, "@ok")), nil
}

// memberOf returns the member (1-based position in the connect string)
// server is, or 0.
func memberOf(connect, server string) int {
	return slices.Index(strings.Split(connect, ","), server) + 1
}

// states collects a connection's session events in order.
type states struct {
	seen []zk.State
}

// await reads events until want arrives or limit passes.
func (s *states) await(events <-chan zk.Event, want zk.State, limit time.Duration) bool {
	deadline := time.After(limit)
	for {
		select {
		case ev := <-events:
			s.seen = append(s.seen, ev.State)
			if ev.State == want {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// ensembleKill kills (SIGKILL) the member a client is connected to: the
// client reconnects to another member with the same session, its
// ephemeral survives, its data watch fires, and it never sees StateExpired.
func ensembleKill(c *checks, connect string, other *zk.Conn) error {
	const base = "/go-ensemble-kill"
	ct := &controller{replies: bufio.NewReader(os.Stdin)}
	conn, events, err := zk.Connect(strings.Split(connect, ","), 20*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	var st states
	if !c.check(st.await(events, zk.StateHasSession, wait), "client has a session") {
		return nil
	}
	sid := conn.SessionID()
	for _, p := range []string{base, base + "/data"} {
		if _, err := conn.Create(p, nil, 0, open); err != nil {
			return err
		}
	}
	if _, err := conn.Create(base+"/eph", nil, zk.FlagEphemeral, open); err != nil {
		return err
	}
	_, _, watch, err := conn.GetW(base + "/data")
	if err != nil {
		return err
	}
	target := memberOf(connect, conn.Server())
	if !c.check(target != 0, "client is on a member", conn.Server()) {
		return nil
	}
	if _, err := ct.do(fmt.Sprintf("kill %d", target)); err != nil {
		return err
	}
	c.check(st.await(events, zk.StateDisconnected, wait), "client sees StateDisconnected")
	c.check(st.await(events, zk.StateHasSession, failover), "client has its session again")
	now := memberOf(connect, conn.Server())
	c.check(now != 0 && now != target, "on another member", conn.Server())
	c.equal(conn.SessionID() == sid, true, "same session id after the failover")
	_, est, err := conn.Exists(base + "/eph")
	c.check(err == nil && est != nil && est.EphemeralOwner == sid, "the ephemeral survives, owned by the session", err)

	// other may have been on the killed member: it retries until it is back.
	deadline := time.Now().Add(failover)
	for {
		_, err = other.Set(base+"/data", []byte("1"), -1)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.noErr(err, "another session changes the data")
	ev, ok := event(watch)
	c.check(ok && ev.Type == zk.EventNodeDataChanged && ev.Path == base+"/data", "the data watch set before fires after", ev)
	c.check(!slices.Contains(st.seen, zk.StateExpired), "no StateExpired", st.seen)
	return nil
}
