package wasmguest

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestCallContext: an activation's context is live until end, then done
// with context.Canceled, and so is every context derived from it, without
// a goroutine watching it; context.AfterFunc's function runs once.
func TestCallContext(t *testing.T) {
	c := newCallContext()
	if c.Err() != nil {
		t.Fatalf("live context: %v", c.Err())
	}
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	timed, cancelTimed := context.WithTimeout(c, time.Hour)
	defer cancelTimed()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	stopped := context.AfterFunc(c, func() { t.Error("a stopped AfterFunc ran") })
	before := runtime.NumGoroutine()
	if !stopped() {
		t.Error("stop reported the function had already run")
	}
	done := c.Done()
	select {
	case <-done:
		t.Fatal("done before end")
	default:
	}
	c.end()
	<-done
	<-child.Done()
	<-timed.Done()
	<-ran
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) || !errors.Is(timed.Err(), context.Canceled) {
		t.Errorf("after end: %v, %v, %v", c.Err(), child.Err(), timed.Err())
	}
	if n := runtime.NumGoroutine(); n > before+1 { // AfterFunc's own goroutine may not have exited yet
		t.Errorf("%d goroutines after end, %d before", n, before)
	}
	late, cancelLate := context.WithCancel(c)
	defer cancelLate()
	if late.Err() == nil {
		t.Error("a context derived after end is live")
	}
	fresh := newCallContext()
	fresh.end()
	select {
	case <-fresh.Done():
	default:
		t.Error("Done asked for only after end is not closed")
	}
}
