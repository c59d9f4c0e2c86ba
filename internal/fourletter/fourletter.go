// Package fourletter is a client of ZooKeeper's four-letter words (ruok,
// srvr, mntr...): it sends the word on a connection of its own and reads
// the reply until the server closes it. The shared test fixtures
// (internal/testutil) and the compat runner, a program that does not
// import package testing, both ask through it.
package fourletter

import (
	"net"
	"strings"
	"time"
)

// Timeouts: connecting, then the whole exchange.
const (
	dialTimeout     = 2 * time.Second
	exchangeTimeout = 5 * time.Second
)

// Ask sends word to addr and returns the whole reply, read until the
// server closes the connection (at most 5 s). What came before a failed
// read is the reply; only a failed connect or write is an error.
func Ask(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(exchangeTimeout)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), nil
		}
	}
}
