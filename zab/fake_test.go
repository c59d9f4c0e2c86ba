package zab

import (
	"bufio"
	"encoding/binary"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/test/ports"
)

// picker is this package's port band, shared by its tests.
var picker = ports.ForZab()

func loopback(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(picker.Free(t))
}

// fakeVoter answers election connections as QuorumCnxManager and
// FastLeaderElection do for an observer: it keeps a connection from a
// larger sid and answers each notification on it with its vote; from a
// smaller sid it closes the connection and dials the address in the
// opening, then answers there.
type fakeVoter struct {
	t    *testing.T
	id   int64
	ln   net.Listener
	vote Notification

	mu      sync.Mutex
	dialled int // connections it opened back
	kept    int // connections it kept
	conns   []net.Conn
}

func newFakeVoter(t *testing.T, id int64, addr string, vote Notification) *fakeVoter {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	v := &fakeVoter{t: t, id: id, ln: ln, vote: vote}
	go v.accept()
	t.Cleanup(v.close)
	return v
}

func (v *fakeVoter) close() {
	v.ln.Close()
	v.mu.Lock()
	for _, c := range v.conns {
		c.Close()
	}
	v.mu.Unlock()
}

func (v *fakeVoter) track(c net.Conn) {
	v.mu.Lock()
	v.conns = append(v.conns, c)
	v.mu.Unlock()
}

func (v *fakeVoter) accept() {
	for {
		c, err := v.ln.Accept()
		if err != nil {
			return
		}
		v.track(c)
		go func() {
			br := bufio.NewReader(c)
			m, err := ReadInitialMessage(br)
			if err != nil {
				c.Close()
				return
			}
			if m.SID < v.id {
				c.Close()
				d, err := net.Dial("tcp", m.Addr)
				if err != nil {
					return
				}
				v.track(d)
				v.mu.Lock()
				v.dialled++
				v.mu.Unlock()
				d.Write((&InitialMessage{Protocol: ProtocolV1, SID: v.id, Addr: v.ln.Addr().String()}).Encode())
				v.answer(d, bufio.NewReader(d))
				return
			}
			v.mu.Lock()
			v.kept++
			v.mu.Unlock()
			v.answer(c, br)
		}()
	}
}

// answer replies to every notification with the voter's vote.
func (v *fakeVoter) answer(c net.Conn, br *bufio.Reader) {
	for {
		body, err := readElectionMessage(br)
		if err != nil {
			return
		}
		if n, err := DecodeNotification(body); err != nil || n.State != Looking {
			continue
		}
		if _, err := c.Write(electionFrame(v.vote.Encode())); err != nil {
			return
		}
	}
}

// fakeLeader accepts learner connections on a quorum port; a test drives
// each connection it hands out.
type fakeLeader struct {
	ln    net.Listener
	conns chan *leaderConn
}

type leaderConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func newFakeLeader(t *testing.T, addr string) *fakeLeader {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLeader{ln: ln, conns: make(chan *leaderConn, 8)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.conns <- &leaderConn{t: t, c: c, br: bufio.NewReader(c)}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

// next returns the next learner connection.
func (l *fakeLeader) next(t *testing.T) *leaderConn {
	t.Helper()
	select {
	case c := <-l.conns:
		t.Cleanup(func() { c.c.Close() })
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no learner connected to the fake leader")
		return nil
	}
}

func (c *leaderConn) read() *Packet {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	p, err := ReadPacket(c.br, Limits{})
	if err != nil {
		c.t.Fatalf("fake leader read: %v", err)
	}
	return p
}

func (c *leaderConn) expect(typ PacketType) *Packet {
	c.t.Helper()
	p := c.read()
	if p.Type != typ {
		c.t.Fatalf("fake leader got %s, want %s", p, typ)
	}
	return p
}

func (c *leaderConn) send(ps ...*Packet) {
	c.t.Helper()
	for _, p := range ps {
		if _, err := c.c.Write(EncodePacket(p)); err != nil {
			c.t.Fatalf("fake leader write %s: %v", p, err)
		}
	}
}

// register plays the leader's side of the registration in epoch: it
// checks OBSERVERINFO and returns the ACKEPOCH.
func (c *leaderConn) register(sid, epoch int64) *Packet {
	c.t.Helper()
	p := c.expect(ObserverInfo)
	var li LearnerInfo
	if err := decodeRecord(p.Data, &li); err != nil || li.ServerID != sid || li.ProtocolVersion != ProtocolVersion {
		c.t.Fatalf("OBSERVERINFO data %+v, %v", li, err)
	}
	c.send(&Packet{Type: LeaderInfo, Zxid: MakeZxid(epoch, 0), Data: binary.BigEndian.AppendUint32(nil, ProtocolVersion)})
	return c.expect(AckEpoch)
}

// txnBytes is a transaction of type typ at zxid for session and cxid
// (a header and a small body, enough for a Handler that records bytes).
func txnBytes(zxid, session int64, cxid, typ int32) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(session))
	b = binary.BigEndian.AppendUint32(b, uint32(cxid))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint64(b, 1700000000000)
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	return append(b, 0, 0, 0, 1, '/')
}

func decodeRecord(b []byte, r interface {
	Decode(*jute.Decoder)
	Encode(*jute.Encoder)
}) error {
	return jute.Decode(b, r)
}
