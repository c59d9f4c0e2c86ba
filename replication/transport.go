package replication

import (
	"github.com/hashicorp/raft"
)

// noPipelineTransport wraps an ensemble member's raft transport and only
// refuses raft's pipelined replication: AppendEntriesPipeline answers
// raft's documented ErrPipelineReplicationNotSupported, so raft replicates
// with one AppendEntries at a time per follower. Everything else goes to
// the wrapped transport unchanged.
//
// raft's pipelined replication can deadlock when a follower rejects an
// append while the pipeline is full (hashicorp/raft#612): pipelineDecode
// stops reading responses, the transport's decoder blocks handing it the
// next one, and the next send blocks on the full in-flight queue, so that
// follower never receives another entry while heartbeats keep it from
// calling an election, and the leader's Shutdown never returns. A long
// chaos run hit it after a member's links were frozen and thawed.
type noPipelineTransport struct {
	raft.Transport
}

// refusePipeline wraps trans; the result has pre-vote when trans has it
// (raft asks the transport's type whether to use pre-votes).
func refusePipeline(trans raft.Transport) raft.Transport {
	t := &noPipelineTransport{Transport: trans}
	if pv, ok := trans.(raft.WithPreVote); ok {
		return &preVoteNoPipelineTransport{noPipelineTransport: t, pv: pv}
	}
	return t
}

type preVoteNoPipelineTransport struct {
	*noPipelineTransport
	pv raft.WithPreVote
}

func (t *preVoteNoPipelineTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.pv.RequestPreVote(id, target, req, resp)
}

// AppendEntriesPipeline refuses pipelining (see noPipelineTransport).
func (t *noPipelineTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// Close closes the wrapped transport when it can be closed.
func (t *noPipelineTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}
