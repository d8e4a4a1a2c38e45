package harness

import (
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/certify/wire"
)

// TestDeliveryClockMoves: a delivery's clock never reads the same twice,
// moves by a provider's latency at an HTTP call and by less at a nearby
// store's, and reads the same times when the delivery runs again; without
// a clock it stands at the logical time, sleeps included.
func TestDeliveryClockMoves(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 4, 5, 0, time.UTC)
	d := wire.Delivery{Now: now, Clock: now.Add(40 * time.Millisecond), Seed: 7}
	readings := func() []time.Time {
		c := newDeliveryClock(d)
		var out []time.Time
		for _, path := range []string{"", wire.PathHTTP, "", wire.PathKVGet, "", wire.PathResult, ""} {
			if path != "" {
				before := c.sent()
				c.wait(path)
				moved := c.sent().Sub(before)
				switch path {
				case wire.PathHTTP:
					if moved < providerLatencyMin || moved >= providerLatencyMax {
						t.Errorf("an HTTP call moved the clock by %s", moved)
					}
				case wire.PathKVGet:
					if moved < nearbyLatencyMin || moved >= nearbyLatencyMax {
						t.Errorf("a KV read moved the clock by %s", moved)
					}
				default:
					if moved != 0 {
						t.Errorf("the harness's own call %s moved the clock by %s", path, moved)
					}
				}
				continue
			}
			out = append(out, c.Now())
		}
		return out
	}
	first := readings()
	if !first[0].After(d.Clock) {
		t.Errorf("first reading %s is not after the delivery's clock %s", first[0], d.Clock)
	}
	for i := 1; i < len(first); i++ {
		if !first[i].After(first[i-1]) {
			t.Errorf("reading %d (%s) is not after reading %d (%s)", i, first[i], i-1, first[i-1])
		}
	}
	again := readings()
	for i := range first {
		if !again[i].Equal(first[i]) {
			t.Errorf("run again, reading %d is %s, first %s", i, again[i], first[i])
		}
	}

	moving := newDeliveryClock(d)
	before := moving.sent()
	moving.Slept(3 * time.Second)
	if got := moving.sent().Sub(before); got != 3*time.Second {
		t.Errorf("a skipped sleep of 3s moved the clock by %s", got)
	}

	pinned := newDeliveryClock(wire.Delivery{Now: now, Seed: 7})
	pinned.wait(wire.PathHTTP)
	pinned.Slept(time.Hour)
	if a, b := pinned.Now(), pinned.Now(); !a.Equal(now) || !b.Equal(now) || !pinned.sent().IsZero() {
		t.Errorf("a pinned clock read %s and %s (sent %s), want %s", a, b, pinned.sent(), now)
	}
}
