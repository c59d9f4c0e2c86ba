// Package ports picks loopback ports for tests that must write a port
// into a configuration before anything binds it, such as the peer ports
// of an ensemble's members. A port is picked below the kernel's ephemeral
// range (32768 and up), where no outgoing connection of a test running
// alongside can take it between the pick and the bind, and every test
// package that does this draws from a band of its own, so that packages
// tested in parallel never pick the same port.
package ports

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Picker hands out free ports of one band, never the same one twice. mu
// guards given.
type Picker struct {
	first, count int

	mu    sync.Mutex
	given map[int]bool
}

func newPicker(first, count int) *Picker {
	return &Picker{first: first, count: count, given: make(map[int]bool)}
}

// The bands, one per test package that picks ports.

// ForCmd is cmd/zkserverd's band, 8000-8999.
func ForCmd() *Picker { return newPicker(8000, 1000) }

// ForMirror is the mirror package's band, 9000-9999.
func ForMirror() *Picker { return newPicker(9000, 1000) }

// ForZab is the zab package's band, 10000-10999.
func ForZab() *Picker { return newPicker(10000, 1000) }

// ForZkproc is internal/zkproc's band, 11000-11999.
func ForZkproc() *Picker { return newPicker(11000, 1000) }

// ForCompat is the compat runner's band, 12000-14999.
func ForCompat() *Picker { return newPicker(12000, 3000) }

// ForTestutil is internal/testutil's band, 15000-15999.
func ForTestutil() *Picker { return newPicker(15000, 1000) }

// ForOps is the server/ops package's band, 16000-16999.
func ForOps() *Picker { return newPicker(16000, 1000) }

// ForServer is the server package's band, 17000-19999.
func ForServer() *Picker { return newPicker(17000, 3000) }

// ForReplication is the replication package's band, 20000-25999.
func ForReplication() *Picker { return newPicker(20000, 6000) }

// ForMigrate is test/migrate's band, 7000-7999.
func ForMigrate() *Picker { return newPicker(7000, 1000) }

// ForIntegration is the test package's band, 26000-31999.
func ForIntegration() *Picker { return newPicker(26000, 6000) }

// Free returns a port of p's band that is free on 127.0.0.1 now and was
// not handed out before. A test that needs several ports for one setup
// picks them all before binding any.
func (p *Picker) Free(t testing.TB) int {
	t.Helper()
	port, err := p.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Pick is Free for a program without a testing.TB (the compat runner).
func (p *Picker) Pick() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 500 {
		port := p.first + rand.IntN(p.count)
		if p.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			p.given[port] = true
			return port, nil
		}
	}
	return 0, errors.New("ports: no free port found")
}
