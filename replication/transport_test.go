package replication

import (
	"errors"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// recordingTransport records the appends it is asked to send.
type recordingTransport struct {
	raft.Transport
	mu   sync.Mutex
	sent []raft.AppendEntriesRequest
}

func (r *recordingTransport) AppendEntries(_ raft.ServerID, _ raft.ServerAddress, req *raft.AppendEntriesRequest, _ *raft.AppendEntriesResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, *req)
	return nil
}

func (r *recordingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, errors.New("the wrapped transport was asked for a pipeline")
}

type preVoteTransport struct{ recordingTransport }

func (*preVoteTransport) RequestPreVote(raft.ServerID, raft.ServerAddress, *raft.RequestPreVoteRequest, *raft.RequestPreVoteResponse) error {
	return nil
}

// TestRefusePipelineOnlyRefusesPipelining: the wrapper answers
// AppendEntriesPipeline with raft's ErrPipelineReplicationNotSupported
// (so raft replicates one append at a time, hashicorp/raft#612), passes
// appends through unchanged, and offers pre-vote exactly when the wrapped
// transport does.
func TestRefusePipelineOnlyRefusesPipelining(t *testing.T) {
	tests := []struct {
		name    string
		inner   raft.Transport
		rec     func(raft.Transport) *recordingTransport
		preVote bool
	}{
		{"without pre-vote", &recordingTransport{}, func(t raft.Transport) *recordingTransport { return t.(*recordingTransport) }, false},
		{"with pre-vote", &preVoteTransport{}, func(t raft.Transport) *recordingTransport { return &t.(*preVoteTransport).recordingTransport }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			trans := refusePipeline(tc.inner)
			if p, err := trans.AppendEntriesPipeline("2", "x"); p != nil || !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
				t.Fatalf("AppendEntriesPipeline = %v, %v; want raft's ErrPipelineReplicationNotSupported", p, err)
			}
			if _, ok := trans.(raft.WithPreVote); ok != tc.preVote {
				t.Fatalf("pre-vote offered: %v, want %v", ok, tc.preVote)
			}
			req := raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 9, PrevLogTerm: 2, LeaderCommitIndex: 9,
				Entries: []*raft.Log{{Index: 10, Term: 3}}}
			if err := trans.AppendEntries("2", "x", &req, &raft.AppendEntriesResponse{}); err != nil {
				t.Fatal(err)
			}
			sent := tc.rec(tc.inner).sent
			if len(sent) != 1 || sent[0].LeaderCommitIndex != 9 || sent[0].PrevLogEntry != 9 || len(sent[0].Entries) != 1 {
				t.Fatalf("sent %+v, want the append unchanged", sent)
			}
		})
	}
}
