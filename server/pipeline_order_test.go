package server

import "testing"

// TestSessionOrder drives one connection's order through sequences of
// arrivals and completions and checks what happens to each write.
func TestSessionOrder(t *testing.T) {
	type want struct {
		now, gated bool
	}
	tests := []struct {
		name  string
		steps func(o *sessionOrder) []want
	}{
		{"write alone is proposed ungated", func(o *sessionOrder) []want {
			now, gated := o.admitWrite(1)
			return []want{{now, gated}, {true, false}}
		}},
		{"write after a queued read is gated", func(o *sessionOrder) []want {
			o.addRead()
			now, gated := o.admitWrite(1)
			return []want{{now, gated}, {true, true}}
		}},
		{"write after a read that ran is ungated", func(o *sessionOrder) []want {
			o.addRead()
			o.readDone()
			now, gated := o.admitWrite(1)
			return []want{{now, gated}, {true, false}}
		}},
		{"write after a sync is deferred, and so is the next", func(o *sessionOrder) []want {
			o.addBarrier()
			n1, g1 := o.admitWrite(1)
			o.barrierDone()
			n2, g2 := o.admitWrite(2)
			o.deferredProposed()
			n3, g3 := o.admitWrite(3)
			return []want{{n1, g1}, {false, false}, {n2, g2}, {false, false}, {n3, g3}, {false, false}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.steps(&sessionOrder{})
			for i := 0; i < len(got); i += 2 {
				if got[i] != got[i+1] {
					t.Errorf("write %d: (now, gated) = %v, want %v", i/2+1, got[i], got[i+1])
				}
			}
		})
	}
}

// TestSessionOrderGateReleasesAfterEarlierReads: the gate of a write that
// arrived behind two reads opens when the second read has run.
func TestSessionOrderGateReleasesAfterEarlierReads(t *testing.T) {
	var o sessionOrder
	o.addRead()
	o.addRead()
	if now, gated := o.admitWrite(7); !now || !gated {
		t.Fatalf("admitWrite = %v, %v; want proposed and gated", now, gated)
	}
	o.addRead() // a read after the write must not hold it
	if _, found := o.gate(8); found {
		t.Fatal("gate found for a write that has none")
	}
	release, found := o.gate(7)
	if !found || release == nil {
		t.Fatalf("gate(7) = %v, %v; want an open wait", release, found)
	}
	o.readDone()
	select {
	case <-release:
		t.Fatal("released after one of two earlier reads")
	default:
	}
	o.readDone()
	select {
	case <-release:
	default:
		t.Fatal("not released after both earlier reads")
	}
	if _, found := o.gate(7); found {
		t.Fatal("a gate is used once")
	}
}
