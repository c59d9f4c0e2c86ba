// Command zkserverd runs a ZooKeeper-compatible coordination server.
//
// With no arguments it serves standalone on port 2181 with its data in
// ./data; `zkserverd --config zoo.cfg` reads a standard ZooKeeper
// configuration file. All logic lives in the packages it calls; this file
// only builds the command tree.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		os.Exit(1)
	}
}
