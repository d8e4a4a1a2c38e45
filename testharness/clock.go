package testharness

import (
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
)

// Clock is a fake runtime.Clock that moves only when told to. It is safe for
// concurrent use; pass its Now to stores and engines so that TTLs and leases
// follow it too.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

// waiter is a channel After handed out, due at a time.
type waiter struct {
	due time.Time
	ch  chan time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d, which may be negative (a skewed replica),
// and fires every After that came due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(c.now.Add(d))
}

// Set moves the clock to t and fires every After that came due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(t)
}

func (c *Clock) set(t time.Time) {
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.due.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t // buffered: never blocks
	}
	c.waiters = kept
}

// After is time.After on this clock: the channel receives the clock's time
// once Advance or Set has moved it d or more past now. Pass it as
// engine.Options.After to drive an engine's timers.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{due: c.now.Add(d), ch: ch})
	return ch
}

// Waiting is how many After channels have not fired yet: a test waits for
// the code under test to arm its timer before it advances the clock.
func (c *Clock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// RNG returns the runtime's seeded random source: the same seed gives the
// same sequence on every machine and Go version.
func RNG(seed uint64) runtime.RNG { return engine.NewSeededRNG(seed) }
