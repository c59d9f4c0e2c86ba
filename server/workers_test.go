package server

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goroutineID returns the running goroutine's id, read from its stack
// trace's first line ("goroutine 42 [running]:").
func goroutineID(t *testing.T) int {
	t.Helper()
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	fields := bytes.Fields(buf)
	if len(fields) < 2 {
		t.Fatalf("unexpected stack header %q", buf)
	}
	id, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		t.Fatalf("unexpected stack header %q", buf)
	}
	return id
}

// runAndWait runs task on w and waits for it, for at most 5 s.
func runAndWait(t *testing.T, w *workers, task func()) {
	t.Helper()
	done := make(chan struct{})
	w.run(func() { defer close(done); task() })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("task did not run within 5 s")
	}
}

// waitIdle waits until want goroutines of w wait for tasks, for at most 5 s.
func waitIdle(t *testing.T, w *workers, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.idle.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("idle goroutines = %d, want %d", w.idle.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWorkersReuseAnEndedTasksGoroutine(t *testing.T) {
	w := newWorkers(nil)
	defer w.stop()
	var first, second int
	runAndWait(t, w, func() { first = goroutineID(t) })
	waitIdle(t, w, 1)
	runAndWait(t, w, func() { second = goroutineID(t) })
	if first != second {
		t.Fatalf("second task ran on goroutine %d, want the first task's %d", second, first)
	}
}

func TestWorkersStartAGoroutineWhenNoneWaits(t *testing.T) {
	w := newWorkers(nil)
	defer w.stop()
	release := make(chan struct{})
	started := make(chan int, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		w.run(func() {
			defer wg.Done()
			started <- goroutineID(t)
			<-release // both tasks must be running at once
		})
	}
	a, b := <-started, <-started
	close(release)
	wg.Wait()
	if a == b {
		t.Fatalf("two concurrent tasks ran on one goroutine (%d)", a)
	}
}

func TestWorkersKeepAtMostMaxIdleGoroutines(t *testing.T) {
	w := newWorkers(nil)
	defer w.stop()
	const tasks = maxIdleWorkers + 20
	release := make(chan struct{})
	var running, done sync.WaitGroup
	running.Add(tasks)
	done.Add(tasks)
	for range tasks {
		w.run(func() {
			defer done.Done()
			running.Done()
			<-release
		})
	}
	running.Wait() // every task has its own goroutine
	close(release)
	done.Wait()
	waitIdle(t, w, maxIdleWorkers)
	time.Sleep(10 * time.Millisecond) // a goroutine over the bound would show up here
	if got := w.idle.Load(); got != maxIdleWorkers {
		t.Fatalf("idle goroutines = %d, want %d", got, maxIdleWorkers)
	}
}

func TestWorkersStopEndsWaitingGoroutines(t *testing.T) {
	w := newWorkers(nil)
	for range 3 {
		runAndWait(t, w, func() {})
	}
	waitIdle(t, w, 1)
	stopped := make(chan struct{})
	go func() { w.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return within 5 s")
	}
	if got := w.idle.Load(); got != 0 {
		t.Fatalf("idle goroutines after stop = %d, want 0", got)
	}
	w.stop() // a second Server.Close stops the pool again
}

// deepTask uses about 64 KiB of stack, as a connection's goroutines go deep.
//
//go:noinline
func deepTask(depth int) byte {
	var frame [1024]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return deepTask(depth-1) + frame[depth%len(frame)]
}

// BenchmarkDeepTasks compares a new goroutine per task with the pool for
// tasks that grow their stacks, as connections' goroutines do.
func BenchmarkDeepTasks(b *testing.B) {
	want := deepTask(64)
	var wrong atomic.Int64
	task := func(done *sync.WaitGroup) func() {
		return func() {
			defer done.Done()
			if deepTask(64) != want {
				wrong.Add(1)
			}
		}
	}
	defer func() {
		if n := wrong.Load(); n > 0 {
			b.Fatalf("%d tasks computed a wrong result", n)
		}
	}()
	b.Run("goroutine", func(b *testing.B) {
		var done sync.WaitGroup
		for b.Loop() {
			done.Add(1)
			go task(&done)()
			done.Wait()
		}
	})
	b.Run("workers", func(b *testing.B) {
		w := newWorkers(nil)
		defer w.stop()
		var done sync.WaitGroup
		for b.Loop() {
			done.Add(1)
			w.run(task(&done))
			done.Wait()
		}
	})
}

// TestWorkersRecoverAPanickingTask: a task's panic goes to onPanic and the
// goroutine that ran it goes on taking tasks.
func TestWorkersRecoverAPanickingTask(t *testing.T) {
	recovered := make(chan any, 1)
	w := newWorkers(func(v any) { recovered <- v })
	defer w.stop()
	var first, second int
	w.run(func() { first = goroutineID(t); panic("task failed") })
	select {
	case v := <-recovered:
		if v != "task failed" {
			t.Fatalf("onPanic got %v", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("onPanic not called within 5 s")
	}
	waitIdle(t, w, 1)
	runAndWait(t, w, func() { second = goroutineID(t) })
	if first != second {
		t.Fatalf("after the panic a task ran on goroutine %d, want the kept goroutine %d", second, first)
	}
}
