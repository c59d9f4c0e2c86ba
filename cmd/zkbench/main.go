// Command zkbench is a load generator for ZooKeeper-compatible servers.
//
//	zkbench run --addr 127.0.0.1:2181 --workload get --duration 10s
//	zkbench run --workload multi --server-pid 1234 --json
//	zkbench wait --addr 127.0.0.1:2181 --since-unix-ns $(date +%s%N)
//	zkbench report --dir results/raw --svg chart.svg
//
// All logic lives in package bench; this command only maps flags onto it.
// scripts/bench-compare.sh drives it to compare zkserverd with Apache
// ZooKeeper (docs/performance.md).
package main

import (
	"os"
)

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		os.Exit(1)
	}
}
