package session

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/zkserverd/zkserverd/jute"
)

// ErrCorrupt is reported by ReadTable for an encoding that is not a valid
// session table.
var ErrCorrupt = errors.New("session: corrupt session table")

// Info describes one live session.
type Info struct {
	ID      int64 // session id
	Timeout int32 // negotiated timeout, ms
}

// Password returns the session's password (see Password).
func (i Info) Password() []byte { return Password(i.ID) }

// Table is the replicated session table: session id → negotiated timeout
// and owner (the member whose connection the session last used; 0 when not
// recorded). It is changed only by applying transactions (one goroutine)
// but read by many goroutines; mu guards sessions.
type Table struct {
	mu       sync.RWMutex
	sessions map[int64]tableEntry
}

type tableEntry struct {
	timeout int32
	owner   int64
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{sessions: make(map[int64]tableEntry)}
}

// Add records session id with the given timeout. Adding a known id only
// updates its timeout.
func (t *Table) Add(id int64, timeout int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	e.timeout = timeout
	t.sessions[id] = e
}

// SetOwner records which member owns session id's connection; it reports
// false for an unknown session.
func (t *Table) SetOwner(id, owner int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.sessions[id]
	if ok {
		e.owner = owner
		t.sessions[id] = e
	}
	return ok
}

// Owner returns session id's owner (0 when unknown or not recorded).
func (t *Table) Owner(id int64) int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.sessions[id].owner
}

// Remove deletes session id and reports whether it was present.
func (t *Table) Remove(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.sessions[id]; !ok {
		return false
	}
	delete(t.sessions, id)
	return true
}

// Get returns session id's entry.
func (t *Table) Get(id int64) (Info, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.sessions[id]
	if !ok {
		return Info{}, false
	}
	return Info{ID: id, Timeout: e.timeout}, true
}

// Len returns the number of sessions.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.sessions)
}

// All returns every session, sorted by id.
func (t *Table) All() []Info {
	t.mu.RLock()
	all := make([]Info, 0, len(t.sessions))
	for id, e := range t.sessions {
		all = append(all, Info{ID: id, Timeout: e.timeout})
	}
	t.mu.RUnlock()
	slices.SortFunc(all, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return all
}

// entrySize is the encoded size of one session: long id + int timeout.
const entrySize = 12

// WriteTo writes the table in ZooKeeper's snapshot layout: int count, then
// count × {long id, int timeout}, big-endian; then zkserverd's owner
// section: int count, count × {long id, long owner} for the sessions with a
// recorded owner. Entries are sorted by id, so equal tables encode to equal
// bytes.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	all := t.All()
	e := jute.NewEncoder(make([]byte, 0, 8+(entrySize+16)*len(all)))
	e.Int(int32(len(all)))
	var owned []int64
	for _, s := range all {
		e.Long(s.ID)
		e.Int(s.Timeout)
		if t.Owner(s.ID) != 0 {
			owned = append(owned, s.ID)
		}
	}
	e.Int(int32(len(owned)))
	for _, id := range owned {
		e.Long(id)
		e.Long(t.Owner(id))
	}
	n, err := w.Write(e.Bytes())
	if err != nil {
		return int64(n), fmt.Errorf("session: write table: %w", err)
	}
	return int64(n), nil
}

// ReadTable reads a table written by WriteTo, consuming exactly its bytes
// from r (so it can sit inside a larger snapshot stream). A negative
// count, a truncated stream or a repeated id is reported as ErrCorrupt;
// memory grows only with the entries actually read.
func ReadTable(r io.Reader) (*Table, error) {
	var buf [entrySize]byte
	if _, err := io.ReadFull(r, buf[:4]); err != nil {
		return nil, fmt.Errorf("%w: count: %w", ErrCorrupt, err)
	}
	d := jute.NewDecoder(buf[:4])
	count := d.Int()
	if count < 0 {
		return nil, fmt.Errorf("%w: negative count %d", ErrCorrupt, count)
	}
	t := NewTable()
	for i := int32(0); i < count; i++ {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return nil, fmt.Errorf("%w: entry %d of %d: %w", ErrCorrupt, i, count, err)
		}
		d := jute.NewDecoder(buf[:])
		id, timeout := d.Long(), d.Int()
		if _, dup := t.sessions[id]; dup {
			return nil, fmt.Errorf("%w: session 0x%x listed twice", ErrCorrupt, id)
		}
		t.sessions[id] = tableEntry{timeout: timeout}
	}
	if err := t.readOwners(r, count); err != nil {
		return nil, err
	}
	return t, nil
}

// readOwners reads the owner section; it may list at most every session.
func (t *Table) readOwners(r io.Reader, sessions int32) error {
	var buf [16]byte
	if _, err := io.ReadFull(r, buf[:4]); err != nil {
		return fmt.Errorf("%w: owner count: %w", ErrCorrupt, err)
	}
	count := jute.NewDecoder(buf[:4]).Int()
	if count < 0 || count > sessions {
		return fmt.Errorf("%w: owner count %d for %d sessions", ErrCorrupt, count, sessions)
	}
	for i := int32(0); i < count; i++ {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return fmt.Errorf("%w: owner %d of %d: %w", ErrCorrupt, i, count, err)
		}
		d := jute.NewDecoder(buf[:])
		id, owner := d.Long(), d.Long()
		if !t.SetOwner(id, owner) {
			return fmt.Errorf("%w: owner of unknown session 0x%x", ErrCorrupt, id)
		}
	}
	return nil
}
