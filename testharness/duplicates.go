package testharness

import (
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
)

// Delivery is one message to deliver again and again.
type Delivery struct {
	Name   string
	Params json.RawMessage
	Input  json.RawMessage
	// Output, when set, is what every delivery must return (compared as
	// JSON values).
	Output json.RawMessage
}

// Target is what Duplicates delivers to and how it observes effects.
type Target struct {
	Node runtime.Runner
	// Caps returns the capabilities for a delivery. Back the clock and the
	// store's notion of now with clock, so that dedupe TTLs follow it.
	Caps func(clock *Clock) runtime.Capabilities
	// Effects returns the effects committed so far per idempotency key, as
	// the outside world saw them (a provider fake, a counting sink).
	Effects func() map[string]int
	// Deliver, when set, is told which idempotency key is about to be
	// delivered (for providers that attribute effects to it).
	Deliver func(key string)
}

// DuplicateOptions shape the schedule.
type DuplicateOptions struct {
	// TTL is the connector's idempotency TTL (default 24h).
	TTL time.Duration
	// Seed makes the schedule reproducible (default 1).
	Seed uint64
	// Start is the clock's first reading (default 2026-01-02T03:04:05Z).
	Start time.Time
}

// DuplicateReport says what was delivered and what the world saw.
type DuplicateReport struct {
	Deliveries int
	Keys       int
	// Extra names each idempotency key with more than one effect inside
	// the TTL (a failure) and how many it had.
	Extra map[string]int
	// AfterTTL names each key that took effect again when redelivered
	// after its TTL: allowed (the dedupe window is the TTL), reported.
	AfterTTL map[string]int
}

// Duplicates delivers every input the way a misbehaving broker would, each
// delivery a first attempt with the same idempotency key:
//
//   - bursts: 2 to 8 copies back to back, the bursts of all inputs in a
//     shuffled order;
//   - delayed replays: one more copy each, with the clock at half the TTL;
//   - time-skewed copies: one with the clock an hour before the first
//     delivery (a replica whose clock lags) and one a second before the TTL
//     runs out;
//
// and then fails the test for every idempotency key that saw more than one
// effect, naming the key, the input and the count. Last, one copy each is
// delivered after the TTL has passed; keys that take effect again are
// reported in AfterTTL but do not fail the test. A delivery that errors or
// returns other output than Delivery.Output fails the test too.
func Duplicates(t testing.TB, target Target, deliveries []Delivery, opts DuplicateOptions) DuplicateReport {
	t.Helper()
	if opts.TTL <= 0 {
		opts.TTL = 24 * time.Hour
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	if len(deliveries) == 0 {
		t.Fatal("testharness.Duplicates: nothing to deliver")
	}
	clock := NewClock(opts.Start)
	caps := target.Caps(clock)
	info := target.Node.Info()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6475706c))
	keys := make([]string, len(deliveries))
	byKey := map[string]string{}
	var bursts [][]int
	for i, d := range deliveries {
		key, err := engine.IdempotencyKey(info, info.ID, d.Input)
		if err != nil {
			t.Fatalf("delivery %s: %v", d.Name, err)
		}
		keys[i], byKey[key] = key, d.Name
		burst := make([]int, 2+rng.IntN(7))
		for j := range burst {
			burst[j] = i
		}
		bursts = append(bursts, burst)
	}
	rng.Shuffle(len(bursts), func(i, j int) { bursts[i], bursts[j] = bursts[j], bursts[i] })
	report := DuplicateReport{Keys: len(byKey)}
	deliver := func(i int) {
		d := deliveries[i]
		if target.Deliver != nil {
			target.Deliver(keys[i])
		}
		report.Deliveries++
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := target.Node.Run(runtime.NewContext(ctx, keys[i], 1, caps), d.Params, d.Input)
		switch {
		case err != nil:
			t.Errorf("%s at %s: a duplicate delivery failed: %v", d.Name, clock.Now().Format(time.RFC3339), err)
		case d.Output != nil && !jsonEqual(d.Output, out):
			t.Errorf("%s at %s: a duplicate delivery returned %s, want %s", d.Name, clock.Now().Format(time.RFC3339), out, d.Output)
		}
	}
	each := func(at time.Time) {
		clock.Set(at)
		for _, i := range rng.Perm(len(deliveries)) {
			deliver(i)
		}
	}
	for _, b := range bursts {
		for _, i := range b {
			deliver(i)
		}
	}
	each(opts.Start.Add(opts.TTL / 2))           // delayed replays
	each(opts.Start.Add(-time.Hour))             // a lagging clock
	each(opts.Start.Add(opts.TTL - time.Second)) // just inside the TTL
	report.Extra = map[string]int{}
	within := target.Effects()
	for _, key := range slices.Sorted(maps.Keys(within)) {
		if n := within[key]; n > 1 {
			report.Extra[key] = n
			t.Errorf("idempotency key %s (%s) saw %d effects within its TTL of %s: pass ctx.IdempotencyKey() to the provider or dedupe with PutIfAbsent",
				key, byKey[key], n, opts.TTL)
		}
	}
	each(opts.Start.Add(opts.TTL + time.Minute)) // past the TTL
	report.AfterTTL = map[string]int{}
	for key, n := range target.Effects() {
		if n > within[key] {
			report.AfterTTL[key] = n - within[key]
		}
	}
	t.Logf("%d deliveries of %d inputs, %d keys with extra effects, %d keys took effect again after the TTL",
		report.Deliveries, len(deliveries), len(report.Extra), len(report.AfterTTL))
	return report
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
