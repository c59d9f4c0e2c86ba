//go:build unix

package server

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/zkserverd/zkserverd/conf"
)

// The client port turns TCP keep-alive on for accepted connections only
// with clientTcpKeepAlive=true, as ZooKeeper does.
func TestClientListenerKeepAlive(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("clientTcpKeepAlive=%v", on), func(t *testing.T) {
			if got := acceptedKeepAlive(t, &Server{cfg: conf.Config{ClientTCPKeepAlive: on}}); got != on {
				t.Errorf("clientTcpKeepAlive=%v: SO_KEEPALIVE on the accepted connection is %v", on, got)
			}
		})
	}
}

// acceptedKeepAlive accepts one connection on s's client listener config
// and reports whether SO_KEEPALIVE is set on the server's side of it.
func acceptedKeepAlive(t *testing.T, s *Server) bool {
	t.Helper()
	ln, err := ClientListenConfig(s.cfg).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rc, err := sc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var optErr error
	if err := rc.Control(func(fd uintptr) {
		v, optErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
	}); err != nil || optErr != nil {
		t.Fatal(err, optErr)
	}
	return v != 0
}
