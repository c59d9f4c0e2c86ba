//go:build !unix

package proctune

import "time"

// processCPU is unknown here: the Tuner then goes by the load alone.
func processCPU() time.Duration { return 0 }
