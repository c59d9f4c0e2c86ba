package main

import (
	"bytes"
	"context"
	"io"
	"strings"
)

// controlPrefix starts a line a scenario prints to ask the runner to act
// on its ensemble; the runner answers with one line on the scenario's stdin.
const controlPrefix = "@control "

// controller carries out one control command and returns the reply line
// (without its newline).
type controller func(ctx context.Context, command string) string

// controlWriter is the stdout of an ensemble scenario. It keeps everything
// as the transcript and, for each complete "@control ..." line, runs the
// controller and writes the reply and a newline to reply. exec's copying
// goroutine is its only writer, so a scenario waits for its reply while the
// command runs.
type controlWriter struct {
	ctx     context.Context
	do      controller
	reply   io.Writer
	out     bytes.Buffer // the transcript
	partial []byte       // the unfinished last line
}

func (w *controlWriter) Write(p []byte) (int, error) {
	w.out.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(w.partial[:i]), "\r")
		w.partial = w.partial[i+1:]
		if command, ok := strings.CutPrefix(line, controlPrefix); ok {
			// A scenario that exited no longer reads its replies.
			io.WriteString(w.reply, w.do(w.ctx, strings.TrimSpace(command))+"\n")
		}
	}
	return len(p), nil
}
