package harness

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/certify/wire"
)

// deliveryClock is a delivery's clock capability (wire.Delivery.Clock):
// from where the recorder set it, it moves as production's does, by a
// little at every reading and by a provider's latency at every call the
// module makes through a capability (the host adds what the module
// slept), all drawn from the delivery's seed, so that a delivery run
// again to compare reads the same times. Without wire.Delivery.Clock it
// stands at the logical time.
type deliveryClock struct {
	mu       sync.Mutex
	t        time.Time
	moving   bool
	rng      *rand.Rand
	delivery int // the delivery's id, which its requests name
}

// clockKey carries a delivery's clock in its context, for the calls
// that take time.
type clockKey struct{}

func newDeliveryClock(d wire.Delivery) *deliveryClock {
	if d.Clock.IsZero() {
		return &deliveryClock{t: d.Now, delivery: d.ID}
	}
	return &deliveryClock{t: d.Clock, moving: true, rng: rand.New(rand.NewPCG(d.Seed, d.Seed^0x636c6f636b)), delivery: d.ID}
}

// Now implements runtime.Clock.
func (c *deliveryClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moving {
		c.t = c.t.Add(c.between(300*time.Nanosecond, 40*time.Microsecond))
	}
	return c.t
}

// sent is what the clock reads as a request leaves, without moving it;
// zero when it stands at the logical time.
func (c *deliveryClock) sent() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.moving {
		return time.Time{}
	}
	return c.t
}

// Slept takes a sleep the wasm host skipped: a moving clock moves by it,
// as production's would have while the module slept; a pinned one stays,
// as the author's fixture tests' clock does.
func (c *deliveryClock) Slept(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moving {
		c.t = c.t.Add(d)
	}
	return true
}

// Latencies of what a capability call reaches in production: a
// provider over the internet or in the same rack, a database or the
// engine's store nearby. Drawn uniform in their logarithm over all that
// production sees, so no range of them is certification's alone.
const (
	providerLatencyMin, providerLatencyMax = 100 * time.Microsecond, 800 * time.Millisecond
	nearbyLatencyMin, nearbyLatencyMax     = 50 * time.Microsecond, 8 * time.Millisecond
)

// wait moves the clock by the latency of a call to the recorder's path.
func (c *deliveryClock) wait(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.moving {
		return
	}
	switch path {
	case wire.PathHTTP:
		c.t = c.t.Add(c.between(providerLatencyMin, providerLatencyMax))
	case wire.PathWork, wire.PathResult, wire.PathEvent:
		// The harness's own calls: production makes none.
	default:
		c.t = c.t.Add(c.between(nearbyLatencyMin, nearbyLatencyMax))
	}
}

// between draws a duration in [lo, hi), uniform in its logarithm, as
// latencies spread.
func (c *deliveryClock) between(lo, hi time.Duration) time.Duration {
	return time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), c.rng.Float64()))
}
