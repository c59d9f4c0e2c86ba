package datatree

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKidsAgainstMap runs random adds and removes on a kids set and a map
// and compares them after every step, with real hashes and with hash
// functions that collide a lot (long probe runs, wrap-around, shifts).
func TestKidsAgainstMap(t *testing.T) {
	seed := maphash.MakeSeed()
	hashes := map[string]func(string) uint32{
		"maphash": func(s string) uint32 { return nameHash(seed, s) },
		"7 values": func(s string) uint32 {
			return uint32(maphash.String(seed, s)%7) + 1
		},
		"top bits": func(s string) uint32 { // equal low bits: all share a home slot
			return uint32(maphash.String(seed, s)%5+1) << 24
		},
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var k *kids
			want := map[string]*node{}
			for step := 0; step < 20000; step++ {
				// Grow to a few hundred, then shrink to nothing, twice.
				grow := (step/5000)%2 == 0
				name := fmt.Sprintf("n%d", r.IntN(400))
				if r.IntN(3) > 0 == grow {
					if want[name] == nil {
						if k == nil {
							k = newKids(0)
						}
						c := namedNode(name)
						k.add(c, hash(name))
						want[name] = c
					}
				} else {
					removed := k != nil && k.remove(name, hash(name))
					if removed != (want[name] != nil) {
						t.Fatalf("step %d: remove %s = %v", step, name, removed)
					}
					delete(want, name)
				}
				checkKids(t, k, want, hash)
			}
		})
	}
}

func checkKids(t *testing.T, k *kids, want map[string]*node, hash func(string) uint32) {
	t.Helper()
	if k.len() != len(want) {
		t.Fatalf("len %d, want %d", k.len(), len(want))
	}
	for name, c := range want {
		if got := k.get(name, hash(name)); got != c {
			t.Fatalf("get %s = %v", name, got)
		}
	}
	if k.get("absent", hash("absent")) != nil {
		t.Fatal("found an absent name")
	}
	var names []string
	k.each(func(c *node) { names = append(names, c.name()) })
	if len(names) != len(want) || len(k.appendTo(nil)) != len(want) {
		t.Fatalf("iteration gave %d names, want %d", len(names), len(want))
	}
	slices.Sort(names)
	if len(slices.Compact(names)) != len(want) {
		t.Fatal("iteration repeats a child")
	}
	if k != nil && k.table && (k.n*4 > len(k.hash)*3 || len(k.hash)&(len(k.hash)-1) != 0) {
		t.Fatalf("table of %d slots holds %d", len(k.hash), k.n)
	}
}

func TestNewKidsPresized(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, n := range []int{0, 1, kidsSmall, kidsSmall + 1, 1000} {
		k := newKids(n)
		size := len(k.hash)
		for i := 0; i < n; i++ {
			name := fmt.Sprint(i)
			k.add(namedNode(name), nameHash(seed, name))
		}
		if k.table && len(k.hash) != size {
			t.Errorf("%d: table grew from %d to %d slots", n, size, len(k.hash))
		}
		if k.len() != n {
			t.Errorf("%d: len %d", n, k.len())
		}
	}
}
