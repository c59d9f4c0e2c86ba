package ports

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeHandsOutDistinctBindablePortsOfItsBand: every port is in the
// band, none is handed out twice, and each can be bound; a port that is
// taken is not handed out.
func TestFreeHandsOutDistinctBindablePortsOfItsBand(t *testing.T) {
	addr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	var taken net.Listener
	first := 0
	for b := 27000; b < 32000 && taken == nil; b += 8 {
		if ln, err := net.Listen("tcp", addr(b+3)); err == nil {
			taken, first = ln, b
		}
	}
	if taken == nil {
		t.Fatal("no port to hold in 27000-31999")
	}
	defer taken.Close()
	p := newPicker(first, 8)
	seen := map[int]bool{}
	for range 4 {
		port := p.Free(t)
		if port < first || port >= first+8 || port == first+3 || seen[port] {
			t.Fatalf("port %d: outside %d-%d, the taken one, or handed out twice (%v)", port, first, first+7, seen)
		}
		seen[port] = true
		ln, err := net.Listen("tcp", addr(port))
		if err != nil {
			t.Fatalf("port %d not bindable: %v", port, err)
		}
		ln.Close()
	}
}

// TestBandsDoNotOverlap: packages tested in parallel never share a port.
func TestBandsDoNotOverlap(t *testing.T) {
	bands := []*Picker{ForZab(), ForZkproc(), ForMirror(), ForCmd(), ForCompat(), ForTestutil(), ForOps(), ForServer(), ForReplication(), ForIntegration(), ForMigrate()}
	for i, a := range bands {
		if a.first+a.count > 32768 {
			t.Errorf("band %d reaches the ephemeral range: %d-%d", i, a.first, a.first+a.count-1)
		}
		for _, b := range bands[i+1:] {
			if a.first < b.first+b.count && b.first < a.first+a.count {
				t.Errorf("bands %d-%d and %d-%d overlap", a.first, a.first+a.count-1, b.first, b.first+b.count-1)
			}
		}
	}
}
