package datatree

import (
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestView(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/a")
	h.tree.View(func(lookup func(string) (jute.Stat, bool)) {
		if st, ok := lookup("/a"); !ok || st.Czxid != 1 {
			t.Errorf("/a: %+v %v", st, ok)
		}
		if st, ok := lookup(""); !ok || st.NumChildren != 2 {
			t.Errorf("root alias: %+v %v", st, ok)
		}
		if _, ok := lookup("/none"); ok {
			t.Error("/none found")
		}
		if h.tree.mu.TryLock() {
			h.tree.mu.Unlock()
			t.Error("View runs without the read lock")
		}
	})
}
