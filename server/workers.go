package server

import (
	"sync"
	"sync/atomic"
)

// maxIdleWorkers bounds the goroutines a workers pool keeps waiting for a
// task; a task that finds none waiting gets a new goroutine.
const maxIdleWorkers = 256

// workers runs a connection's goroutines (its reader, writer and
// completer) on goroutines kept from ended connections. A new goroutine
// starts on a small stack and copies it each time it outgrows it; a
// connection's goroutines go deep (a handshake runs the batcher and raft's
// Apply), so session churn spent ~8% of a standalone server's CPU growing
// stacks (runtime.newstack in a connect+close profile). A kept goroutine
// keeps its grown stack until the garbage collector shrinks it.
//
// idle counts the goroutines waiting on tasks; wg counts every goroutine of
// the pool, so that stop can wait for them. A task that panics is
// recovered and reported to onPanic (without one it is re-raised), and its goroutine goes on
// serving tasks: tasks run client-driven code, and client input must not
// stop the process.
type workers struct {
	onPanic  func(v any) // called from the deferred recover, so the stack is the panic's
	tasks    chan func() // unbuffered: a send succeeds only into a waiting goroutine
	quit     chan struct{}
	quitOnce sync.Once
	idle     atomic.Int32
	wg       sync.WaitGroup
}

func newWorkers(onPanic func(v any)) *workers {
	return &workers{tasks: make(chan func()), quit: make(chan struct{}), onPanic: onPanic}
}

// run runs task on a waiting goroutine, or on a new one when none waits.
func (w *workers) run(task func()) {
	select {
	case w.tasks <- task:
	default:
		w.wg.Add(1)
		go w.work(task)
	}
}

// work runs task, then waits for further tasks while fewer than
// maxIdleWorkers others wait, until stop.
func (w *workers) work(task func()) {
	defer w.wg.Done()
	for {
		w.runTask(task)
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		select {
		case task = <-w.tasks:
		case <-w.quit:
			task = nil
		}
		w.idle.Add(-1)
		if task == nil {
			return
		}
	}
}

// runTask runs one task, recovering a panic it lets escape.
func (w *workers) runTask(task func()) {
	defer func() {
		if v := recover(); v != nil {
			if w.onPanic == nil {
				panic(v)
			}
			w.onPanic(v)
		}
	}()
	task()
}

// stop ends the waiting goroutines and waits for every goroutine of the
// pool; tasks still running must end by themselves. run must not be called
// after stop; stop may be called again (Server.Close may be).
func (w *workers) stop() {
	w.quitOnce.Do(func() { close(w.quit) })
	w.wg.Wait()
}
