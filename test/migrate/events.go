package migrate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Event is one line a client program prints. Which fields are set depends
// on Ev:
//
//	start        Session: the session the client opened
//	state        State: a connection state (Curator's CONNECTED, SUSPENDED,
//	             RECONNECTED, LOST; kazoo's CONNECTED, SUSPENDED, LOST)
//	zkstate      State: a ZooKeeper KeeperState seen by a watcher (Expired...)
//	ephemeral    Path: the ephemeral node created
//	lock         State "acquired"
//	leader       State "gained" or "lost"
//	watching     Path: a watch was set there
//	watch        Path, Type: a watch event (NodeCreated..., or ChildListed
//	             for a child a re-armed children watch listed)
//	ack          Path, Value, Zxid (the node's czxid), Sent: a write acknowledged
//	write_error  Value, Msg, Sent: a write that failed (it may or may not
//	             have been applied)
//	held, final  Session, Lock, Leader, EphemeralOwner: what the client holds
//	             (every second, and once when told to stop)
//	error        Msg
//
// T is the client's clock in ms since the epoch; ZxidSeen the last zxid the
// client's connection had seen when it printed the line.
type Event struct {
	T              int64  `json:"t"`
	Client         string `json:"client"`
	Ev             string `json:"ev"`
	ZxidSeen       int64  `json:"zxid_seen"`
	Session        string `json:"session"`
	State          string `json:"state"`
	Path           string `json:"path"`
	Type           string `json:"type"`
	Value          string `json:"value"`
	Zxid           int64  `json:"zxid"`
	Sent           int64  `json:"sent"`
	Msg            string `json:"msg"`
	Lock           bool   `json:"lock"`
	Leader         bool   `json:"leader"`
	EphemeralOwner string `json:"ephemeral_owner"`
}

// Time is T as a time.Time.
func (e Event) Time() time.Time { return time.UnixMilli(e.T) }

// ParseEvents reads a client's log: one JSON object a line. Lines that are
// not JSON objects (a JVM warning, a Python traceback) are returned apart,
// so the caller can show them.
func ParseEvents(r io.Reader) (events []Event, other []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "{") {
			other = append(other, line)
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w: %q", n, err, line)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read events: %w", err)
	}
	return events, other, nil
}

// sessionID parses a session id as the clients print it ("0x1f...").
func sessionID(s string) (int64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("session id %q: %w", s, err)
	}
	return int64(v), nil
}
