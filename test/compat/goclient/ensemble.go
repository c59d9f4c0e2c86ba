package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
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

// onMember connects with every member in the connect string (the client
// shuffles them) until a connection lands on member; the others are
// closed. It gives up after 40 tries.
func onMember(connect string, member int) (*zk.Conn, <-chan zk.Event, *states, error) {
	for range 40 {
		conn, events, err := zk.Connect(strings.Split(connect, ","), 20*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			return nil, nil, nil, err
		}
		st := &states{}
		if st.await(events, zk.StateHasSession, wait) && memberOf(connect, conn.Server()) == member {
			return conn, events, st, nil
		}
		conn.Close()
	}
	return nil, nil, nil, fmt.Errorf("no connection landed on member %d", member)
}

// ensembleKill kills (SIGKILL) the leader while a client is connected to
// it: the client reconnects to another member with the same session, its
// ephemeral survives, its data watch fires, and it never sees StateExpired.
func ensembleKill(c *checks, connect string, other *zk.Conn) error {
	const base = "/go-ensemble-kill"
	ct := &controller{replies: bufio.NewReader(os.Stdin)}
	leader, err := ct.do("leader")
	if err != nil {
		return err
	}
	target, err := strconv.Atoi(leader)
	if err != nil {
		return fmt.Errorf("leader %q: %w", leader, err)
	}
	conn, events, st, err := onMember(connect, target)
	if !c.check(err == nil, "a client with every member in its connect string is on the leader", err) {
		return nil
	}
	defer conn.Close()
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
