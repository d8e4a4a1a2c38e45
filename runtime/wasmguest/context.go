package wasmguest

import (
	"context"
	"sync"
	"time"
)

// callContext is the context of one activation: cancelled when the
// activation returns, so that what waits on it (database rows, say) ends
// before the goroutines are counted. It makes its done channel only when
// asked for one, and lets contexts derived from it register their
// cancellation (AfterFunc) instead of starting a goroutine to watch it:
// most activations never ask, and context.WithCancel's allocations are
// a measurable part of a small confined call.
type callContext struct {
	mu     sync.Mutex
	done   chan struct{}
	ended  bool
	after  map[*afterFunc]struct{}
	parent context.Context
}

type afterFunc struct{ f func() }

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newCallContext() *callContext { return &callContext{parent: context.Background()} }

func (c *callContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *callContext) Value(key any) any           { return c.parent.Value(key) }

func (c *callContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.ended {
			return closedDone
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *callContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return context.Canceled
	}
	return nil
}

// AfterFunc calls f once the activation has returned, at once if it has.
// The context package registers only quick cancellations here (of the
// contexts derived with context.With*, and of context.AfterFunc's, which
// starts the caller's function in a goroutine of its own).
func (c *callContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		c.mu.Unlock()
		f()
		c.mu.Lock()
		return func() bool { return false }
	}
	a := &afterFunc{f}
	if c.after == nil {
		c.after = map[*afterFunc]struct{}{}
	}
	c.after[a] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.after[a]
		delete(c.after, a)
		return ok
	}
}

// end cancels the context.
func (c *callContext) end() {
	c.mu.Lock()
	c.ended = true
	if c.done != nil {
		close(c.done)
	}
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for a := range after {
		a.f()
	}
}
