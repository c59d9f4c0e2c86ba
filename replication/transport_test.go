package replication

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestMemberTransportRefusesPipelining pins the raft behaviour a member's
// transport relies on (netTransportConfig): with MaxRPCsInFlight 1, raft's
// TCP transport answers AppendEntriesPipeline with
// ErrPipelineReplicationNotSupported, so raft replicates one append at a
// time (hashicorp/raft#612); it still offers pre-vote.
func TestMemberTransportRefusesPipelining(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stream := &streamLayer{Listener: ln, network: tcpNetwork{}, advertise: ln.Addr()}
	trans := raft.NewNetworkTransportWithConfig(netTransportConfig(stream, nil, hclog.NewNullLogger(), time.Second))
	defer trans.Close()
	if p, err := trans.AppendEntriesPipeline("2", "127.0.0.1:1"); p != nil || !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline = %v, %v; want raft's ErrPipelineReplicationNotSupported", p, err)
	}
	if _, ok := any(trans).(raft.WithPreVote); !ok {
		t.Fatal("the member's transport offers no pre-vote")
	}
}

// noPipeline is raft's in-memory transport without pipelined replication,
// as a member's TCP transport runs (netTransportConfig): the tests' raft
// instances replicate as a member's do.
type noPipeline struct{ *raft.InmemTransport }

func (noPipeline) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
