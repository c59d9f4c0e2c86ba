//go:build unix

package server

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/zkserverd/zkserverd/conf"
)

// The client port turns TCP keep-alive on for accepted connections only
// with clientTcpKeepAlive=true, as ZooKeeper does.
func TestClientListenerKeepAlive(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := &Server{cfg: conf.Config{ClientTCPKeepAlive: on}}
		ln, err := s.clientListenConfig().Listen(context.Background(), "tcp", "127.0.0.1:0")
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
		if got := v != 0; got != on {
			t.Errorf("clientTcpKeepAlive=%v: SO_KEEPALIVE on the accepted connection is %v", on, got)
		}
	}
}
