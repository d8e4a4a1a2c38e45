package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// TestHeartbeatKeepsTheLease runs a node for several lease lifetimes while
// it heartbeats: another worker cannot take the job meanwhile, and the
// node's result commits.
func TestHeartbeatKeepsTheLease(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "hb.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const ttl = 150 * time.Millisecond
	var job JobID
	stolen := make(chan error, 1)
	slow := Typed(NodeInfo{ID: "t.slow"}, func(ctx *Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
		deadline := time.Now().Add(4 * ttl)
		tried := false
		for time.Now().Before(deadline) {
			ctx.Heartbeat()
			time.Sleep(ttl / 10)
			if !tried && time.Now().After(deadline.Add(-2*ttl)) {
				tried = true
				stolen <- s.Update(context.Background(), func(tx store.Tx) error {
					_, err := tx.AcquireLease(job[:], "thief", ttl)
					return err
				})
			}
		}
		return json.RawMessage(`{"done":true}`), nil
	})
	e := New(s, Options{Owner: "owner", LeaseTTL: ttl, Visibility: time.Minute})
	if err := e.Register(&Flow{Name: "slow", Nodes: []*FlowNode{{Alias: "n", Runner: slow}}}); err != nil {
		t.Fatal(err)
	}
	if job, err = e.Start(context.Background(), "slow", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(context.Background()); err != nil {
		t.Fatalf("the heartbeating worker was fenced out: %v", err)
	}
	if err := <-stolen; !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("another worker took the job of a heartbeating node: %v", err)
	}
	st, err := e.Status(context.Background(), job)
	if err != nil || st.State != StateSucceeded {
		t.Fatalf("%+v %v", st, err)
	}
}
