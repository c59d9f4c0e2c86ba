package migrate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// goodRun builds the logs of two clients that each wrote n values, one
// zxid apart, disconnected once in the middle (around the switch, 1.5 s
// without acks) and saw every write in their watches: a run Check must
// pass.
func goodRun(n int) Input {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	sessions := map[string]string{"curator": "0x100", "kazoo": "0x200"}
	in := Input{
		Logs: map[string][]Event{}, Watches: map[string][]string{"curator": writers, "kazoo": writers},
		Tree: map[string]string{}, Holdings: map[string]Holding{},
	}
	for _, name := range writers {
		s := sessions[name]
		in.Logs[name] = []Event{
			{T: t0, Client: name, Ev: "state", State: "CONNECTED"},
			{T: t0, Client: name, Ev: "start", Session: s},
			{T: t0, Client: name, Ev: "ephemeral", Path: "/migrate/eph/" + name},
			{T: t0, Client: name, Ev: "lock", State: "acquired"},
			{T: t0, Client: name, Ev: "leader", State: "gained"},
			{T: t0, Client: name, Ev: "watching", Path: "/migrate/w"},
		}
		in.Holdings[name] = Holding{Ephemeral: mustSession(s), Lock: []int64{mustSession(s)}, Leader: []int64{mustSession(s)}}
	}
	// Writes alternate between the clients; every watch sees every write.
	var zxid int64 = 0x100000000
	ms := t0 + 10
	for i := 1; i <= n; i++ {
		if i == n/2 {
			ms += 1500
			for _, who := range writers {
				in.Logs[who] = append(in.Logs[who],
					Event{T: ms - 1500, Client: who, Ev: "state", State: "SUSPENDED", ZxidSeen: zxid},
					Event{T: ms - 5, Client: who, Ev: "state", State: "RECONNECTED", ZxidSeen: zxid})
			}
		}
		for _, name := range writers {
			zxid++
			ms += 10
			value := fmt.Sprintf("%s:%d", name, i)
			path := fmt.Sprintf("/migrate/w/%s/n-%010d", name, i)
			in.Tree[path] = value
			in.Logs[name] = append(in.Logs[name], Event{T: ms, Client: name, Ev: "ack", Path: path, Value: value, Zxid: zxid, ZxidSeen: zxid})
			for _, who := range writers {
				in.Logs[who] = append(in.Logs[who], Event{T: ms, Client: who, Ev: "watch", Path: path, Type: "NodeCreated", ZxidSeen: zxid})
			}
		}
	}
	in.SwitchStart, in.SwitchEnd = time.UnixMilli(ms-1000), time.UnixMilli(ms-500)
	for _, name := range writers {
		in.Logs[name] = append(in.Logs[name], Event{T: ms + 100, Client: name, Ev: "final", Session: sessions[name],
			Lock: true, Leader: true, EphemeralOwner: sessions[name], ZxidSeen: zxid})
	}
	return in
}

func mustSession(s string) int64 {
	id, err := sessionID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// find returns the index of the first event of client name that matches.
func find(in Input, name string, match func(Event) bool) int {
	for i, e := range in.Logs[name] {
		if match(e) {
			return i
		}
	}
	panic("no such event")
}

func ack(e Event) bool { return e.Ev == "ack" }

// beforeFinal inserts e before client name's final line.
func beforeFinal(in *Input, name string, e Event) {
	evs := in.Logs[name]
	last := len(evs) - 1
	in.Logs[name] = append(append(evs[:last:last], e), evs[last])
}

func TestCheckPassesAGoodRunAndMeasuresThePause(t *testing.T) {
	r := Check(goodRun(20))
	if len(r.Failures) != 0 {
		t.Fatalf("failures on a good run:\n%s", strings.Join(r.Failures, "\n"))
	}
	for _, name := range writers {
		if r.Acks[name] != 20 || r.Disconnects[name] != 1 {
			t.Errorf("%s: %d acks, %d disconnections; want 20, 1", name, r.Acks[name], r.Disconnects[name])
		}
		if r.Watched[name] == 0 {
			t.Errorf("%s: its watch checked no write", name)
		}
	}
	if w := r.Worst().Length; w < 1500*time.Millisecond || w > 1600*time.Millisecond {
		t.Errorf("worst pause %v, want about 1.51 s", w)
	}
}

func TestCheckFindsEachBrokenPromise(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(in *Input)
		want   string
	}{
		{"an acked write missing", func(in *Input) {
			delete(in.Tree, in.Logs["kazoo"][find(*in, "kazoo", ack)].Path)
		}, "is not in the tree"},
		{"an acked write with another value", func(in *Input) {
			in.Tree[in.Logs["kazoo"][find(*in, "kazoo", ack)].Path] = "kazoo:999"
		}, "is not in the tree"},
		{"a write applied twice", func(in *Input) {
			e := in.Logs["curator"][find(*in, "curator", ack)]
			in.Tree[e.Path+"-again"] = e.Value
		}, "in the tree 2 times"},
		{"a value nobody sent", func(in *Input) {
			in.Tree["/migrate/w/kazoo/n-9999999999"] = "kazoo:5000"
		}, "never sent"},
		{"a zxid acked twice", func(in *Input) {
			i, j := find(*in, "curator", ack), find(*in, "kazoo", ack)
			in.Logs["kazoo"][j].Zxid = in.Logs["curator"][i].Zxid
		}, "acked twice"},
		{"the zxid seen goes back", func(in *Input) {
			evs := in.Logs["kazoo"]
			evs[len(evs)-1].ZxidSeen = 0x100000001
		}, "zxid went back"},
		{"the session is lost", func(in *Input) {
			beforeFinal(in, "curator", Event{Ev: "state", State: "LOST"})
		}, "session state LOST"},
		{"the session expired", func(in *Input) {
			beforeFinal(in, "curator", Event{Ev: "zkstate", State: "Expired"})
		}, "session state Expired"},
		{"a new session", func(in *Input) {
			evs := in.Logs["kazoo"]
			evs[len(evs)-1].Session = "0x999"
		}, "started with 0x200"},
		{"the lock let go", func(in *Input) {
			evs := in.Logs["kazoo"]
			evs[len(evs)-1].Lock = false
		}, "holds lock=false"},
		{"leadership lost", func(in *Input) {
			beforeFinal(in, "curator", Event{Ev: "leader", State: "lost"})
		}, "leadership lost"},
		{"the ephemeral owned by another session", func(in *Input) {
			h := in.Holdings["curator"]
			h.Ephemeral = 0x999
			in.Holdings["curator"] = h
		}, "ephemeral node owned by 0x999"},
		{"a second lock node", func(in *Input) {
			h := in.Holdings["kazoo"]
			h.Lock = append(h.Lock, 0x999)
			in.Holdings["kazoo"] = h
		}, "lock directory holds"},
		{"a watch event missing after the reconnection", func(in *Input) {
			// the watch event of curator's own last write
			evs := in.Logs["curator"]
			i := find(*in, "curator", func(e Event) bool { return e.Ev == "watch" && e.Path == "/migrate/w/curator/n-0000000020" })
			evs[i].Path = "/elsewhere"
		}, "no watch event for"},
		{"no final line", func(in *Input) {
			evs := in.Logs["kazoo"]
			in.Logs["kazoo"] = evs[:len(evs)-1]
		}, "no final line"},
		{"an error line", func(in *Input) {
			beforeFinal(in, "kazoo", Event{Ev: "error", Msg: "boom"})
		}, "error: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := goodRun(20)
			tt.break_(&in)
			r := Check(in)
			joined := strings.Join(r.Failures, "\n")
			if !strings.Contains(joined, tt.want) {
				t.Errorf("failures do not mention %q:\n%s", tt.want, joined)
			}
		})
	}
}

// TestCheckIgnoresWritesWhileDisconnected: a write made between the
// watcher's last ack before its disconnection and its first ack after it
// need not fire its watch; one after that must.
func TestCheckIgnoresWritesWhileDisconnected(t *testing.T) {
	const n = 20
	drop := func(in Input, path string) {
		i := find(in, "curator", func(e Event) bool { return e.Ev == "watch" && e.Path == path })
		in.Logs["curator"][i].Path = "/elsewhere"
	}
	in := goodRun(n)
	drop(in, fmt.Sprintf("/migrate/w/kazoo/n-%010d", n/2-1))
	if f := Check(in).Failures; len(f) != 0 {
		t.Fatalf("failures:\n%s", strings.Join(f, "\n"))
	}
	in = goodRun(n)
	drop(in, fmt.Sprintf("/migrate/w/kazoo/n-%010d", n/2))
	if f := Check(in).Failures; len(f) != 1 || !strings.Contains(f[0], "no watch event for") {
		t.Fatalf("failures %q, want one missing watch event", f)
	}
}

func TestParseEvents(t *testing.T) {
	text := `{"t": 5, "client": "kazoo", "ev": "ack", "zxid_seen": 4294967297, "path": "/a", "value": "kazoo:1", "zxid": 4294967297}
Picked up JAVA_TOOL_OPTIONS: -Xss1m

{"t":6,"client":"curator","ev":"final","zxid_seen":-1,"session":"0x1","lock":true,"leader":false,"ephemeral_owner":"none"}
`
	evs, other, err := ParseEvents(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || len(other) != 1 {
		t.Fatalf("%d events, %d other lines; want 2, 1", len(evs), len(other))
	}
	if e := evs[0]; e.Zxid != 0x100000001 || e.Value != "kazoo:1" || e.Time() != time.UnixMilli(5) {
		t.Errorf("first event %+v", e)
	}
	if e := evs[1]; !e.Lock || e.Leader || e.EphemeralOwner != "none" || e.ZxidSeen != -1 {
		t.Errorf("second event %+v", e)
	}
	if _, _, err := ParseEvents(strings.NewReader("{not json\n")); err == nil {
		t.Error("a broken JSON line parsed")
	}
}
