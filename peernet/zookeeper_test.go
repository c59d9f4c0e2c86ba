package peernet

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/tlsconf/tlstest"
)

// javaMember is the TLS configuration of an Apache ZooKeeper member with
// cert: it sends nothing but the application's bytes after the handshake.
func javaMember(c certs, cert *tlstest.Cert) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, RootCAs: tlstest.Pool(c.ca),
		ClientCAs: tlstest.Pool(c.ca), ClientAuth: tls.RequireAndVerifyClientCert, ServerName: "localhost"}
}

func TestZooKeeperNetworkListensWithoutHello(t *testing.T) {
	c := newCerts(t)
	tests := []struct {
		name    string
		cert    *tlstest.Cert
		refused bool
	}{
		{name: "member of the quorum CA", cert: c.member},
		{name: "member of another CA", cert: c.stranger, refused: true},
	}
	cfg := side{ssl: true, sasl: true, learnerReq: true, serverReq: true}.config(t, c)
	n, err := NewForZooKeeper(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := n.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go echoServer(ln, make(chan struct{}, 4))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), javaMember(c, tc.cert))
			if err == nil {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(conn, "ping\n")
				var line string
				line, err = bufio.NewReader(conn).ReadString('\n')
				if err == nil && line != "ping\n" {
					t.Fatalf("echo %q", line)
				}
			}
			if tc.refused != (err != nil) {
				t.Fatalf("refused %t, err %v", tc.refused, err)
			}
		})
	}
}

func TestZooKeeperNetworkDialsWithoutHello(t *testing.T) {
	c := newCerts(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", javaMember(c, c.member))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			first <- err.Error()
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			line = err.Error()
		}
		first <- line
	}()
	n, err := NewForZooKeeper(side{ssl: true}.config(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := n.Dial(ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "opening\n")
	if got := <-first; got != "opening\n" {
		t.Fatalf("the member read %q first; want the protocol's own bytes", got)
	}
}

func TestQuorumLoginMechanisms(t *testing.T) {
	c := newCerts(t)
	if l, err := LoadQuorumLogin(side{}.config(t, c)); l != nil || err != nil {
		t.Fatalf("without quorum.auth.enableSasl: %v, %v; want nothing", l, err)
	}
	tests := []struct {
		name, password string
		ok             bool
	}{
		{name: "right password", password: "right", ok: true},
		{name: "wrong password", password: "wrong"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := LoadQuorumLogin(side{sasl: true, learnerReq: true, serverReq: true, learnerPasswd: tc.password}.config(t, c))
			if err != nil {
				t.Fatal(err)
			}
			if !l.LearnerRequire || !l.ServerRequire || l.User != "zkpeer" || !strings.Contains(l.String(), "zkpeer") {
				t.Fatalf("login %+v", l)
			}
			client, server := l.NewLearner(), l.NewServer()
			challenge, err := server.Evaluate(nil)
			if err != nil {
				t.Fatal(err)
			}
			response, err := client.Evaluate(challenge)
			if err != nil {
				t.Fatal(err)
			}
			rspauth, err := server.Evaluate(response)
			if tc.ok != (err == nil) {
				t.Fatalf("server verdict %v, want ok=%t", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if _, err := client.Evaluate(rspauth); err != nil || !client.Complete() || server.AuthenticationID() != "zkpeer" {
				t.Fatalf("rspauth: %v, complete %t, user %q", err, client.Complete(), server.AuthenticationID())
			}
		})
	}
}
