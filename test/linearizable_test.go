package test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The models below are the sequential specifications the chaos tests check
// recorded histories against with porcupine. An operation whose outcome the
// client never learned (the connection was lost with the request in
// flight) is recorded with an open end: porcupine may then place it
// anywhere after its call, including after every other operation, which is
// the same as never having happened.

// regInput is one operation on a single znode used as a register: a write
// of value, or a read (sync then getData, so that it sees every write
// acknowledged before it started).
type regInput struct {
	write bool
	value int
}

// regOutput is what a read returned; a write has none.
type regOutput struct{ value int }

// registerModel: a read returns the last value written.
var registerModel = porcupine.Model{
	Init: func() interface{} { return 0 },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(regOutput).value == state.(int), state
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(regInput)
		if in.write {
			return fmt.Sprintf("set(%d)", in.value)
		}
		return fmt.Sprintf("get() -> %d", output.(regOutput).value)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprint(state) },
}

// counterState is a znode's data (a number) and its data version.
type counterState struct{ value, version int }

// ctrInput is a read of the counter znode, or a setData of value
// conditional on version (compare and set).
type ctrInput struct {
	cas            bool
	version, value int
}

// ctrOutput is a read's result, or a compare and set's outcome: ok
// (applied), BadVersion (not applied), or unknown.
type ctrOutput struct {
	read    counterState
	ok      bool
	unknown bool
}

// counterModel: setData with an expected version applies exactly when the
// version matches, and every applied setData increments the version.
var counterModel = porcupine.Model{
	Init: func() interface{} { return counterState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(counterState), input.(ctrInput), output.(ctrOutput)
		if !in.cas {
			return out.read == s, s
		}
		match := s.version == in.version
		switch {
		case out.unknown && match, out.ok && match:
			return true, counterState{value: in.value, version: s.version + 1}
		case out.unknown, !out.ok && !match:
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(ctrInput), output.(ctrOutput)
		switch {
		case !in.cas:
			return fmt.Sprintf("get() -> %d@v%d", out.read.value, out.read.version)
		case out.unknown:
			return fmt.Sprintf("cas(v%d, %d) -> ?", in.version, in.value)
		}
		return fmt.Sprintf("cas(v%d, %d) -> %v", in.version, in.value, out.ok)
	},
	DescribeState: func(state interface{}) string {
		s := state.(counterState)
		return fmt.Sprintf("%d@v%d", s.value, s.version)
	},
}

// history records operations of concurrent clients with timestamps from
// one monotonic clock (the caller's). mu guards ops.
type history struct {
	mu  sync.Mutex
	ops []porcupine.Operation
}

func newHistory() *history { return &history{} }

// add records an operation; ret < 0 marks an unknown outcome (open end).
func (h *history) add(client int, in, out interface{}, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
}

// closed returns the operations with every open end set after the last
// event of the history, as porcupine needs finite times for its report.
func (h *history) closed() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var last int64
	for _, op := range h.ops {
		last = max(last, op.Call, op.Return)
	}
	out := make([]porcupine.Operation, len(h.ops))
	for i, op := range h.ops {
		if op.Return < 0 {
			op.Return = last + 1
		}
		out[i] = op
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// checkLinearizable checks ops against model and returns "" or a reason.
// On a violation the visualization is written to a file that outlives the
// test (its path is in the reason); annotations mark the faults.
func checkLinearizable(name string, model porcupine.Model, ops []porcupine.Operation, notes []porcupine.Annotation) string {
	res, info := porcupine.CheckOperationsVerbose(model, ops, 60*time.Second)
	switch res {
	case porcupine.Ok:
		return ""
	case porcupine.Unknown:
		return fmt.Sprintf("%s: the checker gave up after 60s on %d operations", name, len(ops))
	}
	info.AddAnnotations(notes)
	dir, err := os.MkdirTemp("", "zkserverd-linearizability-")
	if err != nil {
		return fmt.Sprintf("%s: not linearizable (%d operations); no visualization: %v", name, len(ops), err)
	}
	path := filepath.Join(dir, name+".html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return fmt.Sprintf("%s: not linearizable (%d operations); visualization failed: %v", name, len(ops), err)
	}
	return fmt.Sprintf("%s: not linearizable (%d operations); see %s", name, len(ops), path)
}

// TestLinearizabilityModels: the models accept histories a linearizable
// store can produce, including writes of unknown outcome either applied or
// not, and reject lost, reordered and invented writes.
func TestLinearizabilityModels(t *testing.T) {
	type op struct {
		in, out   interface{}
		call, ret int64 // ret -1: unknown outcome
	}
	w := func(v int, call, ret int64) op { return op{regInput{write: true, value: v}, nil, call, ret} }
	r := func(v int, call, ret int64) op { return op{regInput{}, regOutput{v}, call, ret} }
	get := func(v, ver int, call, ret int64) op {
		return op{ctrInput{}, ctrOutput{read: counterState{v, ver}}, call, ret}
	}
	cas := func(ver, v int, ok bool, call, ret int64) op {
		return op{ctrInput{cas: true, version: ver, value: v}, ctrOutput{ok: ok, unknown: ret < 0}, call, ret}
	}
	cases := []struct {
		name  string
		model porcupine.Model
		ops   []op
		ok    bool
	}{
		{"register sequential", registerModel, []op{w(1, 0, 1), r(1, 2, 3), w(2, 4, 5), r(2, 6, 7)}, true},
		{"register concurrent read may see either", registerModel, []op{w(1, 0, 1), w(2, 2, 6), r(1, 3, 4), r(2, 5, 7)}, true},
		{"register unknown write applied", registerModel, []op{w(1, 0, -1), r(1, 5, 6)}, true},
		{"register unknown write not applied", registerModel, []op{w(1, 0, -1), r(0, 5, 6)}, true},
		{"register lost write", registerModel, []op{w(1, 0, 1), r(0, 2, 3)}, false},
		{"register stale read after newer read", registerModel, []op{w(1, 0, 1), w(2, 2, 3), r(2, 4, 5), r(1, 6, 7)}, false},
		{"register invented value", registerModel, []op{w(1, 0, 1), r(7, 2, 3)}, false},
		{"counter increments", counterModel, []op{get(0, 0, 0, 1), cas(0, 1, true, 2, 3), cas(0, 1, false, 4, 5), get(1, 1, 6, 7)}, true},
		{"counter unknown cas applied", counterModel, []op{cas(0, 1, false, 0, -1), get(1, 1, 4, 5)}, true},
		{"counter unknown cas not applied", counterModel, []op{cas(0, 1, false, 0, -1), get(0, 0, 4, 5)}, true},
		{"counter two cas on one version", counterModel, []op{cas(0, 1, true, 0, 1), cas(0, 1, true, 2, 3)}, false},
		{"counter lost cas", counterModel, []op{cas(0, 1, true, 0, 1), get(0, 0, 2, 3)}, false},
		{"counter badversion on matching version", counterModel, []op{get(0, 0, 0, 1), cas(0, 1, false, 2, 3)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHistory()
			for i, o := range c.ops {
				h.add(i, o.in, o.out, o.call, o.ret)
			}
			if got := porcupine.CheckOperations(c.model, h.closed()); got != c.ok {
				t.Fatalf("linearizable = %v, want %v", got, c.ok)
			}
		})
	}
}
