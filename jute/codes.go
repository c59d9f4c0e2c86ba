package jute

import "fmt"

// Code is a ZooKeeper error code as carried in ReplyHeader.Err and in multi
// results. The zero value OK means success. Code implements error so that a
// protocol outcome can travel through Go error returns and be recovered with
// errors.As.
type Code int32

// The error codes of ZooKeeper 3.8/3.9 (KeeperException.Code).
const (
	OK                           Code = 0
	SystemError                  Code = -1
	RuntimeInconsistency         Code = -2
	DataInconsistency            Code = -3
	ConnectionLoss               Code = -4
	MarshallingError             Code = -5
	Unimplemented                Code = -6
	OperationTimeout             Code = -7
	BadArguments                 Code = -8
	NewConfigNoQuorum            Code = -13
	ReconfigInProgress           Code = -14
	UnknownSession               Code = -12
	APIError                     Code = -100
	NoNode                       Code = -101
	NoAuth                       Code = -102
	BadVersion                   Code = -103
	NoChildrenForEphemerals      Code = -108
	NodeExists                   Code = -110
	NotEmpty                     Code = -111
	SessionExpired               Code = -112
	InvalidCallback              Code = -113
	InvalidACL                   Code = -114
	AuthFailed                   Code = -115
	SessionMoved                 Code = -118
	NotReadOnly                  Code = -119
	EphemeralOnLocalSession      Code = -120
	NoWatcher                    Code = -121
	RequestTimeout               Code = -122
	ReconfigDisabled             Code = -123
	SessionClosedRequireSaslAuth Code = -124
	QuotaExceeded                Code = -125
	ThrottledOp                  Code = -127
)

var codeNames = map[Code]string{
	OK: "OK", SystemError: "SystemError", RuntimeInconsistency: "RuntimeInconsistency",
	DataInconsistency: "DataInconsistency", ConnectionLoss: "ConnectionLoss",
	MarshallingError: "MarshallingError", Unimplemented: "Unimplemented",
	OperationTimeout: "OperationTimeout", BadArguments: "BadArguments",
	NewConfigNoQuorum: "NewConfigNoQuorum", ReconfigInProgress: "ReconfigInProgress",
	UnknownSession: "UnknownSession", APIError: "APIError", NoNode: "NoNode",
	NoAuth: "NoAuth", BadVersion: "BadVersion", NoChildrenForEphemerals: "NoChildrenForEphemerals",
	NodeExists: "NodeExists", NotEmpty: "NotEmpty", SessionExpired: "SessionExpired",
	InvalidCallback: "InvalidCallback", InvalidACL: "InvalidACL", AuthFailed: "AuthFailed",
	SessionMoved: "SessionMoved", NotReadOnly: "NotReadOnly",
	EphemeralOnLocalSession: "EphemeralOnLocalSession", NoWatcher: "NoWatcher",
	RequestTimeout: "RequestTimeout", ReconfigDisabled: "ReconfigDisabled",
	SessionClosedRequireSaslAuth: "SessionClosedRequireSaslAuth",
	QuotaExceeded:                "QuotaExceeded", ThrottledOp: "ThrottledOp",
}

// String returns the code's name as ZooKeeper spells it.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Code(%d)", int32(c))
}

// Error implements error.
func (c Code) Error() string { return "zookeeper: " + c.String() }

// OpCode is a request type (RequestHeader.Type, MultiHeader.Type).
type OpCode int32

// The opcodes of ZooKeeper 3.8/3.9 (ZooDefs.OpCode).
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

var opNames = map[OpCode]string{
	OpNotification: "notification", OpCreate: "create", OpDelete: "delete", OpExists: "exists",
	OpGetData: "getData", OpSetData: "setData", OpGetACL: "getACL", OpSetACL: "setACL",
	OpGetChildren: "getChildren", OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2", OpReconfig: "reconfig",
	OpCheckWatches: "checkWatches", OpRemoveWatches: "removeWatches",
	OpCreateContainer: "createContainer", OpDeleteContainer: "deleteContainer",
	OpCreateTTL: "createTTL", OpMultiRead: "multiRead", OpAuth: "auth", OpSetWatches: "setWatches",
	OpSASL: "sasl", OpGetEphemerals: "getEphemerals", OpGetAllChildrenNumber: "getAllChildrenNumber",
	OpSetWatches2: "setWatches2", OpAddWatch: "addWatch", OpWhoAmI: "whoAmI",
	OpCreateSession: "createSession", OpCloseSession: "closeSession", OpError: "error",
}

// String returns the opcode's name as ZooKeeper's Java constants spell it.
func (o OpCode) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("OpCode(%d)", int32(o))
}

// IsWrite reports whether the opcode changes replicated state (and so
// consumes a zxid). sync is routed through the write path but is not a
// write.
func (o OpCode) IsWrite() bool {
	switch o {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData,
		OpSetACL, OpCheck, OpMulti, OpReconfig, OpCreateSession, OpCloseSession,
		OpDeleteContainer:
		return true
	}
	return false
}

// EventType is WatcherEvent.Type.
type EventType int32

// Watch event types.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// String returns the event type's name.
func (t EventType) String() string {
	switch t {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return fmt.Sprintf("EventType(%d)", int32(t))
}

// KeeperState is WatcherEvent.State. Server notifications always carry
// StateSyncConnected.
type KeeperState int32

// Keeper states.
const (
	StateUnknown           KeeperState = -1
	StateDisconnected      KeeperState = 0
	StateNoSyncConnected   KeeperState = 1
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateSaslAuthenticated KeeperState = 6
	StateClosed            KeeperState = 7
	StateExpired           KeeperState = -112
)

// WatcherType selects watches in checkWatches and removeWatches.
type WatcherType int32

// Watcher types; Persistent and PersistentRecursive are 3.9 additions.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatchMode is AddWatchRequest.Mode.
type AddWatchMode int32

// addWatch modes.
const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// Permission bits of ACL.Perms.
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// CreateMode is CreateRequest.Flags.
type CreateMode int32

// Create modes (CreateMode.toFlag).
const (
	ModePersistent                  CreateMode = 0
	ModeEphemeral                   CreateMode = 1
	ModePersistentSequential        CreateMode = 2
	ModeEphemeralSequential         CreateMode = 3
	ModeContainer                   CreateMode = 4
	ModePersistentWithTTL           CreateMode = 5
	ModePersistentSequentialWithTTL CreateMode = 6
)

// Valid reports whether m is one of the seven defined modes.
func (m CreateMode) Valid() bool { return m >= ModePersistent && m <= ModePersistentSequentialWithTTL }

// IsEphemeral reports whether nodes of this mode belong to a session.
func (m CreateMode) IsEphemeral() bool { return m == ModeEphemeral || m == ModeEphemeralSequential }

// IsSequential reports whether a sequence suffix is appended.
func (m CreateMode) IsSequential() bool {
	return m == ModePersistentSequential || m == ModeEphemeralSequential || m == ModePersistentSequentialWithTTL
}

// IsTTL reports whether the mode carries a time-to-live.
func (m CreateMode) IsTTL() bool {
	return m == ModePersistentWithTTL || m == ModePersistentSequentialWithTTL
}

// IsContainer reports whether the mode is CONTAINER.
func (m CreateMode) IsContainer() bool { return m == ModeContainer }

// Special xids.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Ephemeral-owner encodings for container and TTL nodes (server-internal;
// clients are shown 0).
const (
	ContainerOwner int64 = -0x8000000000000000 // 0x8000000000000000
	TTLOwnerMask   int64 = -0x100000000000000  // 0xFF00000000000000
	MaxTTL         int64 = 1<<40 - 1
)

// DefaultMaxBuffer is jute.maxbuffer's default: the largest frame payload.
const DefaultMaxBuffer = 0xfffff
