package server

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ShedConnections closes percentage percent of this member's client
// connections, chosen at random, and returns how many it closed: the
// AdminServer's shed_connections (ZooKeeper 3.10's command of that name),
// which spreads clients again after a rolling restart left most of them
// on the members that stayed up. The sessions live on: their clients
// reconnect, to whichever member their connect string picks next.
//
// ZooKeeper closes each connection with probability percentage/100, so
// the number it closes varies; this closes exactly the share rounded up
// (0 closes none, 100 closes all). A percentage outside 0..100 is an
// error, and nothing is closed.
func (s *Server) ShedConnections(percentage int) (int, error) {
	if percentage < 0 || percentage > 100 {
		return 0, fmt.Errorf("server: shed connections: percentage must be between 0 and 100, got %d", percentage)
	}
	conns := s.connections()
	n := int(math.Ceil(float64(len(conns)) * float64(percentage) / 100))
	if n == 0 {
		return 0, nil
	}
	rand.Shuffle(len(conns), func(i, j int) { conns[i], conns[j] = conns[j], conns[i] })
	for _, c := range conns[:n] {
		c.abort("shed by the shed_connections command")
	}
	s.log.Info("shed client connections", "shed", n, "of", len(conns), "percentage", percentage)
	return n, nil
}
