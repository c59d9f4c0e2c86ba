package jute

// ID is an authentication identity: a scheme and an id within it.
type ID struct {
	Scheme string
	ID     string
}

// Encode implements Record.
func (r *ID) Encode(e *Encoder) { e.String(r.Scheme); e.String(r.ID) }

// Decode implements Record.
func (r *ID) Decode(d *Decoder) { r.Scheme = d.String(); r.ID = d.String() }

// ACL is one access-control entry: permission bits for an identity.
type ACL struct {
	Perms int32
	ID    ID
}

// Encode implements Record.
func (r *ACL) Encode(e *Encoder) { e.Int(r.Perms); r.ID.Encode(e) }

// Decode implements Record.
func (r *ACL) Decode(d *Decoder) { r.Perms = d.Int(); r.ID.Decode(d) }

// aclSize is the smallest encoding of an ACL: perms and two empty strings.
const aclSize = 12

// encodeACLs writes a vector of ACL.
func encodeACLs(e *Encoder, acls []ACL) {
	e.Int(int32(len(acls)))
	for i := range acls {
		acls[i].Encode(e)
	}
}

// decodeACLs reads a vector of ACL; a null vector reads as nil.
func decodeACLs(d *Decoder) []ACL {
	n := d.vectorLen(aclSize)
	if n == 0 {
		return nil
	}
	out := make([]ACL, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var a ACL
		a.Decode(d)
		out = append(out, a)
	}
	return out
}

// Well-known ACL lists (ZooDefs.Ids).
var (
	// OpenACLUnsafe gives every permission to everyone.
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}}}
	// CreatorAllACL gives every permission to the creator's authenticated ids.
	CreatorAllACL = []ACL{{Perms: PermAll, ID: ID{Scheme: "auth", ID: ""}}}
	// ReadACLUnsafe lets everyone read.
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: ID{Scheme: "world", ID: "anyone"}}}
)

// Stat is a znode's metadata, 68 bytes on the wire.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// StatSize is the encoded size of a Stat.
const StatSize = 68

// Encode implements Record.
func (r *Stat) Encode(e *Encoder) {
	e.Long(r.Czxid)
	e.Long(r.Mzxid)
	e.Long(r.Ctime)
	e.Long(r.Mtime)
	e.Int(r.Version)
	e.Int(r.Cversion)
	e.Int(r.Aversion)
	e.Long(r.EphemeralOwner)
	e.Int(r.DataLength)
	e.Int(r.NumChildren)
	e.Long(r.Pzxid)
}

// Decode implements Record.
func (r *Stat) Decode(d *Decoder) {
	r.Czxid = d.Long()
	r.Mzxid = d.Long()
	r.Ctime = d.Long()
	r.Mtime = d.Long()
	r.Version = d.Int()
	r.Cversion = d.Int()
	r.Aversion = d.Int()
	r.EphemeralOwner = d.Long()
	r.DataLength = d.Int()
	r.NumChildren = d.Int()
	r.Pzxid = d.Long()
}

// ClientInfo is one identity reported by whoAmI.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode implements Record.
func (r *ClientInfo) Encode(e *Encoder) { e.String(r.AuthScheme); e.String(r.User) }

// Decode implements Record.
func (r *ClientInfo) Decode(d *Decoder) { r.AuthScheme = d.String(); r.User = d.String() }

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid  int32
	Type OpCode
}

// Encode implements Record.
func (r *RequestHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Int(int32(r.Type)) }

// Decode implements Record.
func (r *RequestHeader) Decode(d *Decoder) { r.Xid = d.Int(); r.Type = OpCode(d.Int()) }

// ReplyHeader precedes every reply and notification.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// ReplyHeaderSize is the encoded size of a ReplyHeader.
const ReplyHeaderSize = 16

// Encode implements Record.
func (r *ReplyHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Long(r.Zxid); e.Int(int32(r.Err)) }

// Decode implements Record.
func (r *ReplyHeader) Decode(d *Decoder) { r.Xid = d.Int(); r.Zxid = d.Long(); r.Err = Code(d.Int()) }

// ConnectRequest is the first frame a client sends. ReadOnly is present on
// the wire only when HasReadOnly is set (older clients omit the byte).
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode implements Record.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode implements Record. The trailing readOnly byte is read when present.
func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// ConnectResponse answers a ConnectRequest. ReadOnly is written only when
// HasReadOnly is set, mirroring the request.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode implements Record.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode implements Record.
func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// CreateRequest is the body of create (1), create2 (15) and createContainer (19).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
}

// Encode implements Record.
func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int(int32(r.Flags))
}

// Decode implements Record.
func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = CreateMode(d.Int())
}

// CreateTTLRequest is the body of createTTL (21).
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
	TTL   int64
}

// Encode implements Record.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int(int32(r.Flags))
	e.Long(r.TTL)
}

// Decode implements Record.
func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = CreateMode(d.Int())
	r.TTL = d.Long()
}

// CreateResponse is create's reply: the actual path created.
type CreateResponse struct{ Path string }

// Encode implements Record.
func (r *CreateResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode implements Record.
func (r *CreateResponse) Decode(d *Decoder) { r.Path = d.String() }

// Create2Response is the reply of create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode implements Record.
func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }

// Decode implements Record.
func (r *Create2Response) Decode(d *Decoder) { r.Path = d.String(); r.Stat.Decode(d) }

// DeleteRequest is delete's body; Version -1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode implements Record.
func (r *DeleteRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode implements Record.
func (r *DeleteRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int() }

// PathWatchRequest is the body shared by exists, getData, getChildren and
// getChildren2: a path and a watch flag.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

// Encode implements Record.
func (r *PathWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode implements Record.
func (r *PathWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// The read requests that share PathWatchRequest's layout.
type (
	ExistsRequest       = PathWatchRequest
	GetDataRequest      = PathWatchRequest
	GetChildrenRequest  = PathWatchRequest
	GetChildren2Request = PathWatchRequest
)

// StatResponse is a reply that carries only a Stat (exists, setData, setACL).
type StatResponse struct{ Stat Stat }

// Encode implements Record.
func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode implements Record.
func (r *StatResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// The replies that share StatResponse's layout.
type (
	ExistsResponse  = StatResponse
	SetDataResponse = StatResponse
	SetACLResponse  = StatResponse
)

// GetDataResponse is getData's reply; Data is nil for a node holding null.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode implements Record.
func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }

// Decode implements Record.
func (r *GetDataResponse) Decode(d *Decoder) { r.Data = d.Buffer(); r.Stat.Decode(d) }

// SetDataRequest is setData's body.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode implements Record.
func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }

// Decode implements Record.
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// PathRequest is the body shared by requests that carry only a path.
type PathRequest struct{ Path string }

// Encode implements Record.
func (r *PathRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode implements Record.
func (r *PathRequest) Decode(d *Decoder) { r.Path = d.String() }

// The records that share PathRequest's layout.
type (
	GetACLRequest               = PathRequest
	SyncRequest                 = PathRequest
	SyncResponse                = PathRequest
	GetEphemeralsRequest        = PathRequest
	GetAllChildrenNumberRequest = PathRequest
)

// GetACLResponse is getACL's reply.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode implements Record.
func (r *GetACLResponse) Encode(e *Encoder) { encodeACLs(e, r.ACL); r.Stat.Encode(e) }

// Decode implements Record.
func (r *GetACLResponse) Decode(d *Decoder) { r.ACL = decodeACLs(d); r.Stat.Decode(d) }

// SetACLRequest is setACL's body; Version is compared with aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode implements Record.
func (r *SetACLRequest) Encode(e *Encoder) { e.String(r.Path); encodeACLs(e, r.ACL); e.Int(r.Version) }

// Decode implements Record.
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = decodeACLs(d)
	r.Version = d.Int()
}

// GetChildrenResponse is getChildren's reply: child names without slashes.
type GetChildrenResponse struct{ Children []string }

// Encode implements Record.
func (r *GetChildrenResponse) Encode(e *Encoder) { e.Strings(r.Children) }

// Decode implements Record.
func (r *GetChildrenResponse) Decode(d *Decoder) { r.Children = d.Strings() }

// GetChildren2Response is getChildren2's reply.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode implements Record.
func (r *GetChildren2Response) Encode(e *Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }

// Decode implements Record.
func (r *GetChildren2Response) Decode(d *Decoder) { r.Children = d.Strings(); r.Stat.Decode(d) }

// CheckVersionRequest is check's body (inside multi).
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode implements Record.
func (r *CheckVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode implements Record.
func (r *CheckVersionRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int() }

// ReconfigRequest is reconfig's body.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// Encode implements Record.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Long(r.CurConfigID)
}

// Decode implements Record.
func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Long()
}

// WatchesRequest is the body of checkWatches and removeWatches.
type WatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode implements Record.
func (r *WatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(int32(r.Type)) }

// Decode implements Record.
func (r *WatchesRequest) Decode(d *Decoder) { r.Path = d.String(); r.Type = WatcherType(d.Int()) }

// The records that share WatchesRequest's layout.
type (
	CheckWatchesRequest  = WatchesRequest
	RemoveWatchesRequest = WatchesRequest
)

// AuthPacket is the auth request's body (xid -4).
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode implements Record.
func (r *AuthPacket) Encode(e *Encoder) { e.Int(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }

// Decode implements Record.
func (r *AuthPacket) Decode(d *Decoder) { r.Type = d.Int(); r.Scheme = d.String(); r.Auth = d.Buffer() }

// SetWatches is setWatches' body (opcode 101).
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode implements Record.
func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

// Decode implements Record.
func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
}

// SetWatches2 is setWatches2's body (opcode 105).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode implements Record.
func (r *SetWatches2) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

// Decode implements Record.
func (r *SetWatches2) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
}

// SASLToken is the body of the sasl request and its reply (GetSASLRequest,
// SetSASLResponse).
type SASLToken struct{ Token []byte }

// Encode implements Record.
func (r *SASLToken) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode implements Record.
func (r *SASLToken) Decode(d *Decoder) { r.Token = d.Buffer() }

// The records that share SASLToken's layout.
type (
	GetSASLRequest  = SASLToken
	SetSASLResponse = SASLToken
)

// PathsResponse is a reply carrying a list of paths (getEphemerals).
type PathsResponse struct{ Paths []string }

// Encode implements Record.
func (r *PathsResponse) Encode(e *Encoder) { e.Strings(r.Paths) }

// Decode implements Record.
func (r *PathsResponse) Decode(d *Decoder) { r.Paths = d.Strings() }

// GetEphemeralsResponse is getEphemerals' reply: full paths.
type GetEphemeralsResponse = PathsResponse

// IntResponse is a reply carrying one int (getAllChildrenNumber's
// totalNumber, addWatch's ErrorResponse).
type IntResponse struct{ Value int32 }

// Encode implements Record.
func (r *IntResponse) Encode(e *Encoder) { e.Int(r.Value) }

// Decode implements Record.
func (r *IntResponse) Decode(d *Decoder) { r.Value = d.Int() }

// The records that share IntResponse's layout.
type (
	GetAllChildrenNumberResponse = IntResponse
	ErrorResponse                = IntResponse
)

// AddWatchRequest is addWatch's body.
type AddWatchRequest struct {
	Path string
	Mode AddWatchMode
}

// Encode implements Record.
func (r *AddWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(int32(r.Mode)) }

// Decode implements Record.
func (r *AddWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Mode = AddWatchMode(d.Int()) }

// WhoAmIResponse is whoAmI's reply.
type WhoAmIResponse struct{ ClientInfo []ClientInfo }

// Encode implements Record.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	e.Int(int32(len(r.ClientInfo)))
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

// Decode implements Record.
func (r *WhoAmIResponse) Decode(d *Decoder) {
	n := d.vectorLen(8)
	r.ClientInfo = nil
	for i := 0; i < n && d.err == nil; i++ {
		var c ClientInfo
		c.Decode(d)
		r.ClientInfo = append(r.ClientInfo, c)
	}
}

// WatcherEvent is a notification's body (xid -1).
type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
}

// Encode implements Record.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}

// Decode implements Record.
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int())
	r.State = KeeperState(d.Int())
	r.Path = d.String()
}

// Empty is the record of requests and replies with no body.
type Empty struct{}

// Encode implements Record.
func (*Empty) Encode(*Encoder) {}

// Decode implements Record.
func (*Empty) Decode(*Decoder) {}
