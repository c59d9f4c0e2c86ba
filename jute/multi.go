package jute

import "fmt"

// MultiHeader precedes each op of a multi request and each result of a multi
// response; a header with Done set ends the sequence.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Code
}

// Encode implements Record.
func (r *MultiHeader) Encode(e *Encoder) { e.Int(int32(r.Type)); e.Bool(r.Done); e.Int(int32(r.Err)) }

// Decode implements Record.
func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = OpCode(d.Int())
	r.Done = d.Bool()
	r.Err = Code(d.Int())
}

// multiEnd is the terminating header of both requests and responses.
var multiEnd = MultiHeader{Type: OpError, Done: true, Err: -1}

// MultiOp is one operation of a multi or multiRead request.
type MultiOp struct {
	Type    OpCode
	Request Record
}

// MultiRequest is the body of multi (14) and multiRead (22).
type MultiRequest struct{ Ops []MultiOp }

// Encode implements Record.
func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		op.Request.Encode(e)
	}
	multiEnd.Encode(e)
}

// Decode implements Record. An op type that may not appear in a multi or
// multiRead fails the decode, as ZooKeeper's MultiOperationRecord does.
func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = nil
	for d.err == nil {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		req := newMultiOpRequest(h.Type)
		if req == nil {
			d.Fail(fmt.Errorf("jute: invalid op type %d in multi", int32(h.Type)))
			return
		}
		req.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Request: req})
	}
}

// newMultiOpRequest returns an empty request record for an op type allowed
// inside multi or multiRead, or nil.
func newMultiOpRequest(t OpCode) Record {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData,
		OpCheck, OpGetData, OpGetChildren:
		return NewRequest(t)
	}
	return nil
}

// MultiResult is one op's outcome in a multi or multiRead response. For a
// failed op Type is OpError and Err the code; Response is then ignored (an
// ErrorResponse carrying Err is written). For a success Err is OK and
// Response is the op's reply record, or nil for delete and check.
type MultiResult struct {
	Type     OpCode
	Err      Code
	Response Record
}

// MultiResponse is the body of a multi or multiRead reply.
type MultiResponse struct{ Results []MultiResult }

// Encode implements Record.
func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		if res.Type == OpError {
			h := MultiHeader{Type: OpError, Done: false, Err: res.Err}
			h.Encode(e)
			e.Int(int32(res.Err))
			continue
		}
		h := MultiHeader{Type: res.Type, Done: false, Err: OK}
		h.Encode(e)
		if res.Response != nil {
			res.Response.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

// Decode implements Record.
func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = nil
	for d.err == nil {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		// Only an error result's own body carries its code; the header's err
		// of a success result is ignored, as ZooKeeper's clients do.
		res := MultiResult{Type: h.Type}
		switch h.Type {
		case OpError:
			res.Err = Code(d.Int())
		case OpCreate:
			res.Response = &CreateResponse{}
		case OpCreate2, OpCreateContainer, OpCreateTTL:
			res.Response = &Create2Response{}
		case OpSetData:
			res.Response = &SetDataResponse{}
		case OpGetData:
			res.Response = &GetDataResponse{}
		case OpGetChildren:
			res.Response = &GetChildrenResponse{}
		case OpDelete, OpCheck:
		default:
			d.Fail(fmt.Errorf("jute: invalid result type %d in multi response", int32(h.Type)))
			return
		}
		if res.Response != nil {
			res.Response.Decode(d)
		}
		r.Results = append(r.Results, res)
	}
}
