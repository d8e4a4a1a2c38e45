package runtime

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestKillBeatsPause: a paused job that is killed, and a killed job that
// is then paused, end killed without anyone resuming them.
func TestKillBeatsPause(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
		if err := e.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		for _, order := range []string{"pause, then kill", "kill, then pause"} {
			job, err := e.Start(ctx, "linear", json.RawMessage(`{"n":1}`))
			if err != nil {
				t.Fatal(err)
			}
			ops := []func() error{func() error { return e.Pause(ctx, job) }, func() error { return e.Kill(ctx, job, "stop") }}
			if order == "kill, then pause" {
				ops[0], ops[1] = ops[1], ops[0]
			}
			for _, op := range ops {
				if err := op(); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 { // a paused job's messages come back every 200 ms
				if err := drain(t, e); err != nil {
					t.Fatal(err)
				}
				r.clock.Advance(time.Second)
			}
			st, err := e.Status(ctx, job)
			if err != nil || st.State != StateKilled {
				t.Errorf("%s: job %+v (%v), want killed", order, st, err)
			}
		}
	})
}
