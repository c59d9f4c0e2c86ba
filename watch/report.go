package watch

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Count returns the number of watches in both tables, one per (connection,
// path, table) whatever its modes: mntr's zk_watch_count.
func (r *Registry) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dataCount + r.childCount
}

// Summary describes the data table only (ZooKeeper's wchs quirk): the
// connections listed in it, the paths with at least one data watch, and the
// number of data watches. A connection whose data watches have all fired is
// still counted until it closes (see the package doc).
func (r *Registry) Summary() (connections, paths, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dataConns, r.dataPaths, r.dataCount
}

// ByConnection maps each session id listed in the data table to its sorted
// watched paths (wchc; AdminServer "watches"). A connection whose data
// watches have all fired maps to an empty list. Entries of several
// connections with the same session id are merged.
func (r *Registry) ByConnection() map[int64][]string {
	r.mu.Lock()
	out := make(map[int64][]string, r.dataConns)
	for _, ws := range r.watchers {
		if !ws.inData {
			continue
		}
		id := ws.w.ID()
		list := out[id]
		if list == nil {
			list = make([]string, 0, ws.nData)
		}
		for pe := range ws.subs {
			if pe.subs[ws.subs[pe]].data != 0 {
				list = append(list, pe.path)
			}
		}
		out[id] = list
	}
	r.mu.Unlock()
	for id, list := range out {
		slices.Sort(list)
		out[id] = slices.Compact(list)
	}
	return out
}

// ByPath maps each path with data watches to the session ids watching it,
// sorted as unsigned numbers (the order of their hex form) (wchp; AdminServer "watches_by_path").
func (r *Registry) ByPath() map[string][]int64 {
	r.mu.Lock()
	out := make(map[string][]int64, r.dataPaths)
	for path, pe := range r.paths {
		if pe.nData == 0 {
			continue
		}
		ids := make([]int64, 0, pe.nData)
		for _, s := range pe.subs {
			if s.data != 0 {
				ids = append(ids, s.w.w.ID())
			}
		}
		out[path] = ids
	}
	r.mu.Unlock()
	for path, ids := range out {
		sortIDs(ids)
		out[path] = slices.Compact(ids)
	}
	return out
}

// sortIDs sorts session ids as unsigned numbers, the order of their hex
// form.
func sortIDs(ids []int64) {
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(uint64(a), uint64(b)) })
}

// WriteWCHS writes the wchs four-letter-word reply:
// "<n> connections watching <m> paths\nTotal watches:<k>\n".
func WriteWCHS(w io.Writer, r *Registry) error {
	conns, paths, total := r.Summary()
	_, err := fmt.Fprintf(w, "%d connections watching %d paths\nTotal watches:%d\n", conns, paths, total)
	if err != nil {
		return fmt.Errorf("watch: write wchs: %w", err)
	}
	return nil
}

// WriteWCHC writes the wchc four-letter-word reply: per session (ascending as
// unsigned),
// "0x<hex id>\n" then "\t<path>\n" per path, and a final empty line.
// ZooKeeper prints in hash order; this prints sorted.
func WriteWCHC(w io.Writer, r *Registry) error {
	byConn := r.ByConnection()
	ids := make([]int64, 0, len(byConn))
	for id := range byConn {
		ids = append(ids, id)
	}
	sortIDs(ids)
	bw := bufio.NewWriter(w)
	for _, id := range ids {
		writeSession(bw, "", id)
		for _, p := range byConn[id] {
			bw.WriteByte('\t')
			bw.WriteString(p)
			bw.WriteByte('\n')
		}
	}
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("watch: write wchc: %w", err)
	}
	return nil
}

// WriteWCHP writes the wchp four-letter-word reply: per path (sorted),
// "<path>\n" then "\t0x<hex id>\n" per session, and a final empty line.
func WriteWCHP(w io.Writer, r *Registry) error {
	byPath := r.ByPath()
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	bw := bufio.NewWriter(w)
	for _, p := range paths {
		bw.WriteString(p)
		bw.WriteByte('\n')
		for _, id := range byPath[p] {
			writeSession(bw, "\t", id)
		}
	}
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("watch: write wchp: %w", err)
	}
	return nil
}

// writeSession writes prefix, "0x", the id as Java's Long.toHexString would
// (unsigned, lower case, no padding) and a newline. Errors stick in bw.
func writeSession(bw *bufio.Writer, prefix string, id int64) {
	bw.WriteString(prefix)
	bw.WriteString("0x")
	bw.WriteString(strconv.FormatUint(uint64(id), 16))
	bw.WriteByte('\n')
}
