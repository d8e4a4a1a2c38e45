package testharness

import (
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Clock is a fake runtime.Clock that moves only when told to. It is safe for
// concurrent use; pass its Now to stores and engines so that TTLs and leases
// follow it too.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d, which may be negative (a skewed replica).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// RNG returns the runtime's seeded random source: the same seed gives the
// same sequence on every machine and Go version.
func RNG(seed uint64) runtime.RNG { return runtime.NewSeededRNG(seed) }
