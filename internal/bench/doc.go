// Package bench is a load generator for ZooKeeper-compatible servers.
//
// It speaks the ZooKeeper client protocol directly (package jute) through a
// minimal asynchronous client, Conn, that pipelines many requests on one
// connection and matches replies by xid. A run opens Config.Sessions
// sessions, keeps Config.InFlight requests outstanding on each, and records
// every reply's latency in a log-linear Histogram, so the figures do not
// depend on a client library's queueing.
//
// A caller fills a Config (DefaultConfig gives sensible values), calls Run,
// and prints the Result (FormatText, or encoding/json for --json):
//
//	cfg := bench.DefaultConfig()
//	cfg.Addrs = []string{"127.0.0.1:2181"}
//	cfg.Workload = "get"
//	res, err := bench.Run(ctx, cfg)
//
// Workloads are mixes of operations (create, set, get, exists, children,
// multi, mixed; see Workloads); scenarios measure one behaviour each
// (watch fan-out, session connect+close rate, znode memory). When
// Config.ServerPIDs names the server processes, a run also reports their
// CPU time per operation and resident memory, read from /proc.
//
// Summarize and the Write* functions turn many Results (rounds of several
// targets) into the comparison table, CSV, JSON and SVG chart that
// scripts/bench-compare.sh publishes.
package bench
