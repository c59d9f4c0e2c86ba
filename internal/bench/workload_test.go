package bench

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestMixAtBoundaries(t *testing.T) {
	keeper, err := WorkloadMix("multi", 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		u    int
		want OpKind
	}{
		{0, KindMulti}, {69, KindMulti},
		{70, KindChildren}, {89, KindChildren},
		{90, KindCreate}, {94, KindCreate},
		{95, KindSet}, {99, KindSet},
		{-3, KindMulti}, {250, KindSet}, // clamped
	}
	if keeper.Total() != 100 {
		t.Fatalf("total = %d, want 100", keeper.Total())
	}
	for _, tt := range tests {
		if got := keeper.At(tt.u); got != tt.want {
			t.Errorf("At(%d) = %v, want %v", tt.u, got, tt.want)
		}
	}
}

func TestMixZeroWeightNeverChosen(t *testing.T) {
	m, err := NewMix(Weighted{KindGet, 0}, Weighted{KindSet, 3}, Weighted{KindExists, 0}, Weighted{KindCreate, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Kinds(); !slices.Equal(got, []OpKind{KindSet, KindCreate}) {
		t.Fatalf("kinds = %v", got)
	}
	for u := range m.Total() {
		if k := m.At(u); k == KindGet || k == KindExists {
			t.Fatalf("At(%d) chose zero-weight kind %v", u, k)
		}
	}
}

func TestNewMixRejects(t *testing.T) {
	if _, err := NewMix(); err == nil {
		t.Error("empty mix accepted")
	}
	if _, err := NewMix(Weighted{KindGet, 0}); err == nil {
		t.Error("all-zero mix accepted")
	}
	if _, err := NewMix(Weighted{KindGet, 5}, Weighted{KindSet, -1}); err == nil {
		t.Error("negative weight accepted")
	}
}

func TestWorkloadMixProportions(t *testing.T) {
	tests := []struct {
		workload    string
		readPercent int
		want        map[OpKind]float64
	}{
		{"create", 0, map[OpKind]float64{KindCreate: 1}},
		{"set", 0, map[OpKind]float64{KindSet: 1}},
		{"get", 0, map[OpKind]float64{KindGet: 1}},
		{"exists", 0, map[OpKind]float64{KindExists: 1}},
		{"children", 0, map[OpKind]float64{KindChildren: 1}},
		{"multi", 0, map[OpKind]float64{KindMulti: 0.70, KindChildren: 0.20, KindCreate: 0.05, KindSet: 0.05}},
		{"mixed", 90, map[OpKind]float64{KindGet: 0.9, KindSet: 0.1}},
		{"mixed", 0, map[OpKind]float64{KindSet: 1}},
		{"mixed", 100, map[OpKind]float64{KindGet: 1}},
	}
	const draws = 200000
	for _, tt := range tests {
		m, err := WorkloadMix(tt.workload, tt.readPercent)
		if err != nil {
			t.Fatalf("%s: %v", tt.workload, err)
		}
		r := rand.New(rand.NewPCG(3, 4))
		counts := map[OpKind]int{}
		for range draws {
			counts[m.Pick(r)]++
		}
		for k, n := range counts {
			if _, ok := tt.want[k]; !ok {
				t.Errorf("%s/%d: drew %v %d times, expected never", tt.workload, tt.readPercent, k, n)
			}
		}
		for k, share := range tt.want {
			got := float64(counts[k]) / draws
			if math.Abs(got-share) > 0.005 {
				t.Errorf("%s/%d: %v share = %.4f, want %.2f", tt.workload, tt.readPercent, k, got, share)
			}
		}
	}
}

func TestWorkloadMixRejects(t *testing.T) {
	if _, err := WorkloadMix("teleport", 0); !errors.Is(err, ErrUnknownWorkload) {
		t.Errorf("unknown workload: %v", err)
	}
	for _, p := range []int{-1, 101} {
		if _, err := WorkloadMix("mixed", p); err == nil {
			t.Errorf("read percent %d accepted", p)
		}
	}
}

func TestOpBuilderRequests(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Keys, cfg.ChildrenPerDir, cfg.RunID = 25, 10, "x"
	l := newLayout(cfg)
	if len(l.dirs) != 3 || l.keys[24] != "/zkbench/k/d0002/k0000024" {
		t.Fatalf("layout: %d dirs, last key %q", len(l.dirs), l.keys[24])
	}
	b := opBuilder{l: &l, rng: rand.New(rand.NewPCG(1, 1)), payload: []byte("abc"), dir: l.sessionDir(3)}
	wantOps := map[OpKind]jute.OpCode{
		KindCreate: jute.OpCreate, KindSet: jute.OpSetData, KindGet: jute.OpGetData,
		KindExists: jute.OpExists, KindChildren: jute.OpGetChildren, KindMulti: jute.OpMulti,
	}
	for k := range numKinds {
		op, req := b.build(k)
		if op != wantOps[k] {
			t.Errorf("%v: opcode %v, want %v", k, op, wantOps[k])
		}
		// Every request must encode and decode as its opcode's record.
		back := jute.NewRequest(op)
		if err := jute.Decode(jute.Encode(req), back); err != nil {
			t.Errorf("%v: request does not round-trip: %v", k, err)
		}
	}
	// Two creates so far (KindCreate and KindMulti): names are unique and
	// in the session's directory.
	c := b.nextCreate()
	if c.Path != "/zkbench/r-x/s0003/n2" || string(c.Data) != "abc" {
		t.Fatalf("third create = %q %q", c.Path, c.Data)
	}
	_, children := b.build(KindChildren)
	if p := children.(*jute.GetChildrenRequest).Path; !slices.Contains(l.dirs, p) {
		t.Fatalf("getChildren of %q, not a key directory", p)
	}
	_, get := b.build(KindGet)
	if p := get.(*jute.GetDataRequest).Path; !strings.HasPrefix(p, "/zkbench/k/d") || !slices.Contains(l.keys, p) {
		t.Fatalf("getData of %q, not a key", p)
	}
}

func TestReplyCode(t *testing.T) {
	failed := jute.Encode(&jute.MultiResponse{Results: []jute.MultiResult{
		{Type: jute.OpError, Err: jute.OK},
		{Type: jute.OpError, Err: jute.BadVersion},
		{Type: jute.OpError, Err: jute.RuntimeInconsistency},
	}})
	ok := jute.Encode(&jute.MultiResponse{Results: []jute.MultiResult{
		{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: "/a"}},
		{Type: jute.OpSetData, Response: &jute.SetDataResponse{}},
	}})
	tests := []struct {
		name string
		op   jute.OpCode
		r    Reply
		want jute.Code
	}{
		{"plain success", jute.OpGetData, Reply{Err: jute.OK}, jute.OK},
		{"plain failure", jute.OpCreate, Reply{Err: jute.NodeExists}, jute.NodeExists},
		{"multi success", jute.OpMulti, Reply{Body: ok}, jute.OK},
		{"multi failure names the culprit", jute.OpMulti, Reply{Body: failed}, jute.BadVersion},
		{"multi header error", jute.OpMulti, Reply{Err: jute.MarshallingError}, jute.MarshallingError},
		{"garbled multi", jute.OpMulti, Reply{Body: []byte{1, 2}}, jute.MarshallingError},
	}
	for _, tt := range tests {
		if got := replyCode(tt.op, tt.r); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	tests := []struct {
		mutate func(*Config)
		field  string
	}{
		{func(c *Config) { c.Addrs = nil }, "addrs"},
		{func(c *Config) { c.Workload = "nope" }, "workload"},
		{func(c *Config) { c.Sessions = 0 }, "sessions"},
		{func(c *Config) { c.InFlight = 0 }, "inflight"},
		{func(c *Config) { c.Duration = 0 }, "duration"},
		{func(c *Config) { c.Root = "/" }, "root"},
		{func(c *Config) { c.Root = "rel" }, "root"},
		{func(c *Config) { c.ReadPercent = 120 }, "read-percent"},
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.field+":") {
			t.Errorf("want an error naming %s, got %v", tt.field, err)
		}
	}
}
