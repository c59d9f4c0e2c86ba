package session

import (
	"encoding/hex"
	"math"
	"sync"
	"testing"
)

// lcg is an independent transcription of java.util.Random's definition
// (seed scrambling, next(32), nextBytes), used to check Password.
type lcg struct{ s int64 }

func newLCG(seed int64) *lcg { return &lcg{s: (seed ^ 0x5DEECE66D) & (1<<48 - 1)} }

func (r *lcg) next32() int32 {
	r.s = (r.s*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int32(uint32(uint64(r.s) >> 16))
}

func (r *lcg) nextBytes(n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		v := r.next32()
		for j := 0; j < 4 && len(out) < n; j++ {
			out = append(out, byte(v))
			v >>= 8
		}
	}
	return out
}

func TestJavaRandomKnownValue(t *testing.T) {
	// new java.util.Random(0).nextInt() == -1155484576.
	if got := newJavaRandom(0).nextInt(); got != -1155484576 {
		t.Fatalf("javaRandom(0).nextInt() = %d, want -1155484576", got)
	}
	if got := newLCG(0).next32(); got != -1155484576 {
		t.Fatalf("reference lcg(0).next32() = %d, want -1155484576", got)
	}
}

func TestPasswordMatchesLCG(t *testing.T) {
	ids := []int64{0, 1, -1, 0x10000116dd50017, math.MinInt64 + 1, math.MaxInt64, 0x0101234567890000}
	for _, id := range ids {
		want := newLCG(id ^ 0xB3415C00).nextBytes(16)
		got := Password(id)
		if hex.EncodeToString(got) != hex.EncodeToString(want) {
			t.Errorf("Password(0x%x) = %x, want %x", id, got, want)
		}
		if len(got) != PasswordLen {
			t.Errorf("len(Password(0x%x)) = %d", id, len(got))
		}
	}
}

// TestPasswordCaptured checks ids/passwords from ConnectResponses sent by a
// real ZooKeeper 3.8.0 (spec/vectors).
func TestPasswordCaptured(t *testing.T) {
	tests := []struct {
		id   int64
		want string
	}{
		{0x10000116dd50017, "695f54c6bb321d4e3373fc4ff40b26d0"},
		{0x10000116dd50018, "c80437c6daac79a6fdc1002916b88cd1"},
		{0x10000116dd5000a, "d3d3e4c59acfaf6a676ba688a933ac08"},
		{0x10000116dd50012, "09ba71c69bb8c0f56924f876d25fbfce"},
		{0x10000116dd50001, "742e02c67a5553129c1ca2af87874507"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(Password(tt.id)); got != tt.want {
			t.Errorf("Password(0x%x) = %s, want %s", tt.id, got, tt.want)
		}
	}
	if got := (Info{ID: tests[0].id}).Password(); hex.EncodeToString(got) != tests[0].want {
		t.Errorf("Info.Password() = %x", got)
	}
}

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name                string
		requested, min, max int32
		want                int32
	}{
		{"within", 10000, 4000, 40000, 10000},
		{"at min", 4000, 4000, 40000, 4000},
		{"at max", 40000, 4000, 40000, 40000},
		{"below min", 1000, 4000, 40000, 4000},
		{"above max", 100000, 4000, 40000, 40000},
		{"zero", 0, 4000, 40000, 4000},
		{"negative", -5, 4000, 40000, 4000},
		{"min above max: max wins", 5000, 6000, 3000, 3000},
		{"int32 max", math.MaxInt32, 4000, 40000, 40000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Negotiate(tt.requested, tt.min, tt.max); got != tt.want {
				t.Fatalf("Negotiate(%d, %d, %d) = %d, want %d", tt.requested, tt.min, tt.max, got, tt.want)
			}
		})
	}
}

func TestIDGeneratorFormat(t *testing.T) {
	tests := []struct {
		name      string
		server    int64
		millis    int64
		wantFirst int64
	}{
		{"standalone", 1, 0x0123456789, 0x0101234567890000},
		{"millis above 40 bits are dropped", 3, 0xAB_0123456789, 0x0301234567890000},
		{"captured shape", 1, 0x116dd5, 0x010000116dd50000},
		{"zero id skipped", 0, 0, 1},
		{"container owner skipped", 128, 0, math.MinInt64 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewIDGenerator(tt.server, tt.millis)
			first := g.Next()
			if first != tt.wantFirst {
				t.Fatalf("first id = 0x%x, want 0x%x", uint64(first), uint64(tt.wantFirst))
			}
			if second := g.Next(); second != first+1 {
				t.Fatalf("second id = 0x%x, want 0x%x", uint64(second), uint64(first+1))
			}
			if top := uint64(first) >> 56; top != uint64(tt.server) {
				t.Fatalf("top byte = %d, want server id %d", top, tt.server)
			}
		})
	}
}

func TestIDGeneratorConcurrent(t *testing.T) {
	g := NewIDGenerator(7, 1700000000000)
	const workers, per = 8, 1000
	var mu sync.Mutex
	seen := make(map[int64]bool, workers*per)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]int64, 0, per)
			for range per {
				local = append(local, g.Next())
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate id 0x%x", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	if len(seen) != workers*per {
		t.Fatalf("got %d distinct ids, want %d", len(seen), workers*per)
	}
	base := NewIDGenerator(7, 1700000000000).Next()
	for id := range seen {
		if id < base || id >= base+workers*per {
			t.Fatalf("id 0x%x outside [0x%x, +%d)", id, base, workers*per)
		}
	}
}
