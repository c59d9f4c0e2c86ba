// Package procgroup starts a child process in a process group of its own,
// its output appended to a log file, and signals the whole group: the
// servers and clients that the test harnesses run (internal/zkproc,
// test/compat/runner, test/migrate) are JVMs and scripts whose every
// thread and child must stop with them.
//
// It signals only the groups it started, and only while their process
// has not been reaped. Kill waits for the exit; Stop waits at most its
// grace before it kills.
package procgroup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ErrExited is what Signal returns once the process has exited.
var ErrExited = errors.New("not running")

// Options says how to start a process.
type Options struct {
	// Dir is the working directory; "" keeps the caller's.
	Dir string
	// Env is added to the caller's environment.
	Env []string
	// Log is the file that stdout and stderr are appended to (created if
	// missing).
	Log string
	// Stdin gives the process a pipe on its stdin (Process.Stdin); without
	// it stdin reads from the null device.
	Stdin bool
}

// Process is a started process, the leader of its process group.
type Process struct {
	cmd   *exec.Cmd
	log   string
	stdin io.WriteCloser
	done  chan struct{}
	err   error // Wait's result; written before done closes
}

// Start starts argv as o says.
func Start(argv []string, o Options) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("procgroup: empty command line")
	}
	f, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("procgroup: open the log: %w", err)
	}
	p := &Process{cmd: exec.Command(argv[0], argv[1:]...), log: o.Log, done: make(chan struct{})}
	p.cmd.Dir = o.Dir
	if len(o.Env) > 0 {
		p.cmd.Env = append(os.Environ(), o.Env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.Stdin {
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			f.Close()
			return nil, fmt.Errorf("procgroup: stdin of %s: %w", argv[0], err)
		}
	}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("procgroup: start %s: %w", argv[0], err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Log is the path of the process's combined stdout and stderr.
func (p *Process) Log() string { return p.log }

// Stdin is the pipe to the process's stdin (nil unless Options.Stdin).
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to exit and returns how it ended, as
// exec.Cmd.Wait reports it.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Signal sends sig to the process group; ErrExited if the process has
// exited.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return ErrExited
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Kill sends SIGKILL to the process group and waits until the process
// has exited.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop ends the process group: SIGTERM, and SIGCONT in case it was
// stopped; SIGKILL if the process has not exited after grace. It returns
// once the process has exited.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	p.Signal(syscall.SIGTERM)
	p.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}
