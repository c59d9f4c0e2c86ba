package bench

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// cleanWindow is the number of requests DeleteTree keeps outstanding.
const cleanWindow = 512

// DeleteTree deletes root and every znode under it and returns how many
// znodes it deleted. It lists the tree level by level with getChildren,
// then deletes from the deepest level up on one session, whose FIFO order
// guarantees children go before their parent. A root that does not exist
// is not an error. Nothing else may write under root meanwhile.
func DeleteTree(ctx context.Context, cfg Config, root string) (int, error) {
	if !strings.HasPrefix(root, "/") || root == "/" || strings.HasSuffix(root, "/") {
		return 0, errors.New("bench: root: must be an absolute znode path other than /")
	}
	cfg = cfg.withDefaults()
	deleted := 0
	err := withConn(ctx, cfg, func(c *Conn) error {
		levels, err := listTree(ctx, c, root)
		if err != nil {
			return err
		}
		var order []string
		for _, level := range slices.Backward(levels) {
			order = append(order, level...)
		}
		err = pipeline(ctx, c, len(order), cleanWindow, func(i int) (jute.OpCode, jute.Record) {
			return jute.OpDelete, &jute.DeleteRequest{Path: order[i], Version: -1}
		}, acceptNoNode, func(_ int, r Reply, _ time.Duration) {
			if r.Err == jute.OK {
				deleted++
			}
		})
		if err != nil {
			return fmt.Errorf("bench: delete under %s: %w", root, err)
		}
		return nil
	})
	return deleted, err
}

// listTree returns the znodes under root by depth: levels[0] is {root}
// (or nothing when root does not exist), levels[d] the znodes at depth d.
func listTree(ctx context.Context, c *Conn, root string) ([][]string, error) {
	levels := [][]string{{root}}
	for {
		cur := levels[len(levels)-1]
		children := make([][]string, len(cur))
		err := pipeline(ctx, c, len(cur), cleanWindow, func(i int) (jute.OpCode, jute.Record) {
			return jute.OpGetChildren, &jute.GetChildrenRequest{Path: cur[i]}
		}, acceptNoNode, func(i int, r Reply, _ time.Duration) {
			if r.Err != jute.OK {
				return
			}
			var resp jute.GetChildrenResponse
			if jute.Decode(r.Body, &resp) == nil {
				for _, name := range resp.Children {
					children[i] = append(children[i], path.Join(cur[i], name))
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("bench: list under %s: %w", root, err)
		}
		next := slices.Concat(children...)
		if len(next) == 0 {
			return levels, nil
		}
		levels = append(levels, next)
	}
}
