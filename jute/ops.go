package jute

// NewRequest returns an empty request record for a client opcode, or nil
// when the opcode is not one a client may send. Opcodes whose request has no
// body (ping, closeSession, whoAmI) return Empty.
func NewRequest(op OpCode) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete:
		return &DeleteRequest{}
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpGetACL, OpSync, OpGetEphemerals, OpGetAllChildrenNumber:
		return &PathRequest{}
	case OpSetACL:
		return &SetACLRequest{}
	case OpCheck:
		return &CheckVersionRequest{}
	case OpMulti, OpMultiRead:
		return &MultiRequest{}
	case OpReconfig:
		return &ReconfigRequest{}
	case OpCheckWatches, OpRemoveWatches:
		return &WatchesRequest{}
	case OpAuth:
		return &AuthPacket{}
	case OpSetWatches:
		return &SetWatches{}
	case OpSetWatches2:
		return &SetWatches2{}
	case OpSASL:
		return &SASLToken{}
	case OpAddWatch:
		return &AddWatchRequest{}
	case OpPing, OpCloseSession, OpWhoAmI:
		return &Empty{}
	}
	return nil
}

// NewResponse returns an empty success-response record for a client opcode,
// or nil when the opcode is not one a client may send. Opcodes whose reply
// has no body return Empty.
func NewResponse(op OpCode) Record {
	switch op {
	case OpCreate:
		return &CreateResponse{}
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return &Create2Response{}
	case OpExists, OpSetData, OpSetACL:
		return &StatResponse{}
	case OpGetData, OpReconfig:
		return &GetDataResponse{}
	case OpGetACL:
		return &GetACLResponse{}
	case OpGetChildren:
		return &GetChildrenResponse{}
	case OpGetChildren2:
		return &GetChildren2Response{}
	case OpSync:
		return &SyncResponse{}
	case OpMulti, OpMultiRead:
		return &MultiResponse{}
	case OpSASL:
		return &SASLToken{}
	case OpGetEphemerals:
		return &PathsResponse{}
	case OpGetAllChildrenNumber, OpAddWatch:
		return &IntResponse{}
	case OpWhoAmI:
		return &WhoAmIResponse{}
	case OpDelete, OpCheck, OpCheckWatches, OpRemoveWatches, OpAuth, OpSetWatches,
		OpSetWatches2, OpPing, OpCloseSession:
		return &Empty{}
	}
	return nil
}

// ClientOpCodes lists every opcode a ZooKeeper 3.8/3.9 client may send.
var ClientOpCodes = []OpCode{
	OpCreate, OpDelete, OpExists, OpGetData, OpSetData, OpGetACL, OpSetACL,
	OpGetChildren, OpSync, OpPing, OpGetChildren2, OpCheck, OpMulti, OpCreate2,
	OpReconfig, OpCheckWatches, OpRemoveWatches, OpCreateContainer, OpCreateTTL,
	OpMultiRead, OpAuth, OpSetWatches, OpSASL, OpGetEphemerals,
	OpGetAllChildrenNumber, OpSetWatches2, OpAddWatch, OpWhoAmI, OpCloseSession,
}
