package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"

	"github.com/zkserverd/zkserverd/jute"
)

// ErrUnknownWorkload is returned for a workload name Run does not know.
var ErrUnknownWorkload = errors.New("bench: unknown workload")

// OpKind is one kind of operation a workload issues.
type OpKind int

// The operation kinds. Each issues one request; KindMulti is one multi
// holding a create of a new znode and a setData of an existing key.
const (
	KindCreate OpKind = iota
	KindSet
	KindGet
	KindExists
	KindChildren
	KindMulti
	numKinds
)

var kindNames = [numKinds]string{"create", "set", "get", "exists", "children", "multi"}

// String returns the kind's name as used in reports.
func (k OpKind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Weighted is one entry of a Mix: a kind and its relative weight.
type Weighted struct {
	Kind   OpKind
	Weight int
}

// Mix chooses operation kinds at random in proportion to their weights.
// The zero Mix is unusable; build one with NewMix.
type Mix struct {
	kinds []OpKind
	cum   []int // cum[i] = sum of the weights of entries 0..i
}

// NewMix builds a Mix. Weights must be non-negative and sum to more than
// zero; entries of weight zero are never chosen.
func NewMix(entries ...Weighted) (Mix, error) {
	var m Mix
	total := 0
	for _, e := range entries {
		if e.Weight < 0 {
			return Mix{}, fmt.Errorf("bench: negative weight %d for %v", e.Weight, e.Kind)
		}
		if e.Weight == 0 {
			continue
		}
		total += e.Weight
		m.kinds = append(m.kinds, e.Kind)
		m.cum = append(m.cum, total)
	}
	if total == 0 {
		return Mix{}, errors.New("bench: a mix needs a positive weight")
	}
	return m, nil
}

// Total returns the sum of the weights.
func (m Mix) Total() int { return m.cum[len(m.cum)-1] }

// At maps u in [0, Total()) to a kind: the first entry whose cumulative
// weight exceeds u. Values outside the range are clamped.
func (m Mix) At(u int) OpKind {
	i := sort.SearchInts(m.cum, u+1)
	return m.kinds[min(max(i, 0), len(m.kinds)-1)]
}

// Pick draws one kind using r.
func (m Mix) Pick(r *rand.Rand) OpKind { return m.At(r.IntN(m.Total())) }

// Kinds returns the kinds the mix can choose, in entry order.
func (m Mix) Kinds() []OpKind { return append([]OpKind(nil), m.kinds...) }

// The scenario names Run accepts besides the operation workloads.
const (
	ScenarioWatch   = "watch"
	ScenarioConnect = "connect"
	ScenarioZnodes  = "znodes"
	// ScenarioWatchMem loads Znodes znodes and sets Watchers data watches
	// on each (one per watching session), reporting memory per watch.
	ScenarioWatchMem = "watchmem"
)

// workloadNames lists the operation workloads, then the scenarios, in the
// order reports use. Read-only.
var workloadNames = []string{"create", "set", "get", "exists", "children", "multi", "mixed",
	ScenarioWatch, ScenarioConnect, ScenarioZnodes, ScenarioWatchMem}

// Workloads returns the names Run accepts: the operation workloads, then
// the scenarios, in the order reports use.
func Workloads() []string { return slices.Clone(workloadNames) }

// WorkloadMix returns the operation mix of a named workload: one kind for
// create, set, get, exists and children; "multi" is the Keeper-style mix
// (70% multi of create+set, 20% getChildren, 5% create, 5% set); "mixed"
// is readPercent% getData and the rest setData.
func WorkloadMix(name string, readPercent int) (Mix, error) {
	switch name {
	case "create":
		return NewMix(Weighted{KindCreate, 1})
	case "set":
		return NewMix(Weighted{KindSet, 1})
	case "get":
		return NewMix(Weighted{KindGet, 1})
	case "exists":
		return NewMix(Weighted{KindExists, 1})
	case "children":
		return NewMix(Weighted{KindChildren, 1})
	case "multi":
		return NewMix(Weighted{KindMulti, 70}, Weighted{KindChildren, 20},
			Weighted{KindCreate, 5}, Weighted{KindSet, 5})
	case "mixed":
		if readPercent < 0 || readPercent > 100 {
			return Mix{}, fmt.Errorf("bench: read percent %d is outside 0..100", readPercent)
		}
		return NewMix(Weighted{KindGet, readPercent}, Weighted{KindSet, 100 - readPercent})
	}
	return Mix{}, fmt.Errorf("%w %q", ErrUnknownWorkload, name)
}

// layout names the znodes a run uses under its root:
//
//	<root>/k                     keys parent; its data records the key set
//	<root>/k/dNNNN               ChildrenPerDir keys each (getChildren targets)
//	<root>/k/dNNNN/kNNNNNNN      the keys (get, set, exists targets)
//	<root>/r-<run>/sNNNN/nN      znodes created by session NNNN of this run
type layout struct {
	root    string
	keys    []string
	dirs    []string
	runDir  string
	perDir  int
	dataLen int
}

func newLayout(cfg Config) layout {
	l := layout{
		root:    cfg.Root,
		runDir:  cfg.Root + "/r-" + cfg.RunID,
		perDir:  cfg.ChildrenPerDir,
		dataLen: cfg.DataSize,
		keys:    make([]string, cfg.Keys),
	}
	ndirs := (cfg.Keys + cfg.ChildrenPerDir - 1) / cfg.ChildrenPerDir
	l.dirs = make([]string, ndirs)
	for d := range l.dirs {
		l.dirs[d] = fmt.Sprintf("%s/k/d%04d", cfg.Root, d)
	}
	for i := range l.keys {
		l.keys[i] = fmt.Sprintf("%s/k%07d", l.dirs[i/cfg.ChildrenPerDir], i)
	}
	return l
}

// keysParent returns the parent of the key directories.
func (l layout) keysParent() string { return l.root + "/k" }

// marker is the data of keysParent once every key exists, so a later run
// with the same shape can skip creating them.
func (l layout) marker() []byte {
	return fmt.Appendf(nil, "keys=%d perDir=%d data=%d", len(l.keys), l.perDir, l.dataLen)
}

// sessionDir is where session i creates its znodes.
func (l layout) sessionDir(i int) string { return fmt.Sprintf("%s/s%04d", l.runDir, i) }

// flatDir is the one parent of every znode of a flat znodes run.
func (l layout) flatDir() string { return l.runDir + "/flat" }

// opBuilder makes the requests of one session. It is used by one goroutine.
type opBuilder struct {
	l       *layout
	rng     *rand.Rand
	payload []byte
	dir     string // this session's create directory
	created int    // znodes named so far in dir
}

// nextCreate returns a create of a new znode in the session's directory.
func (b *opBuilder) nextCreate() *jute.CreateRequest {
	p := b.dir + "/n" + strconv.Itoa(b.created)
	b.created++
	return &jute.CreateRequest{Path: p, Data: b.payload, ACL: jute.OpenACLUnsafe, Flags: jute.ModePersistent}
}

func (b *opBuilder) randomKey() string { return b.l.keys[b.rng.IntN(len(b.l.keys))] }

// build returns the request for one operation of kind k.
func (b *opBuilder) build(k OpKind) (jute.OpCode, jute.Record) {
	switch k {
	case KindCreate:
		return jute.OpCreate, b.nextCreate()
	case KindSet:
		return jute.OpSetData, &jute.SetDataRequest{Path: b.randomKey(), Data: b.payload, Version: -1}
	case KindGet:
		return jute.OpGetData, &jute.GetDataRequest{Path: b.randomKey()}
	case KindExists:
		return jute.OpExists, &jute.ExistsRequest{Path: b.randomKey()}
	case KindChildren:
		return jute.OpGetChildren, &jute.GetChildrenRequest{Path: b.l.dirs[b.rng.IntN(len(b.l.dirs))]}
	default: // KindMulti
		return jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Request: b.nextCreate()},
			{Type: jute.OpSetData, Request: &jute.SetDataRequest{Path: b.randomKey(), Data: b.payload, Version: -1}},
		}}
	}
}

// replyCode returns the outcome of a reply: the header's code, or for a
// multi whose header says OK, the code of its first failed op.
func replyCode(op jute.OpCode, r Reply) jute.Code {
	if r.Err != jute.OK || op != jute.OpMulti {
		return r.Err
	}
	d := jute.NewDecoder(r.Body)
	var h jute.MultiHeader
	h.Decode(d)
	if d.Err() != nil {
		return jute.MarshallingError
	}
	if h.Type != jute.OpError || h.Done {
		return jute.OK
	}
	// A failed multi reports OK for the ops before the culprit; find it.
	var resp jute.MultiResponse
	if jute.Decode(r.Body, &resp) != nil {
		return jute.MarshallingError
	}
	for _, res := range resp.Results {
		if res.Type == jute.OpError && res.Err != jute.OK {
			return res.Err
		}
	}
	return jute.OK
}
