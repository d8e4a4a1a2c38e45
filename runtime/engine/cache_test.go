package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestCacheReusesOutputsAcrossJobs: a Strict connector with a cache keyed
// by sku is called once per sku while its entry lives, by any job; after
// the TTL it is called again. Both stores.
func TestCacheReusesOutputsAcrossJobs(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		var calls atomic.Int64
		lookup := runtime.Typed(runtime.NodeInfo{ID: "catalog.lookup", Version: "1.0.0", Effects: runtime.ReadOnly, Determinism: runtime.Strict,
			Cache: runtime.Cache{Key: []string{"sku"}, TTL: time.Minute}},
			func(ctx *runtime.Context, _ noParams, in struct {
				SKU string `json:"sku"`
			}) (json.RawMessage, error) {
				return json.RawMessage(fmt.Sprintf(`{"sku":%q,"call":%d}`, in.SKU, calls.Add(1))), nil
			})
		e := New(r.store, Options{Now: r.clock.Now})
		if err := e.Register(&runtime.Flow{Name: "lookup", Nodes: []*runtime.FlowNode{{Alias: "lookup", Runner: lookup}}}); err != nil {
			t.Fatal(err)
		}
		run := func(sku string) (string, runtime.JobID) {
			t.Helper()
			job, err := e.Start(ctx, "lookup", json.RawMessage(`{"sku":"`+sku+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			st, err := e.Status(ctx, job)
			if err != nil || st.State != runtime.StateSucceeded {
				t.Fatalf("%+v %v", st, err)
			}
			return string(st.Result["lookup"]), job
		}
		first, _ := run("a")
		again, cachedJob := run("a")
		other, _ := run("b")
		if first != `{"sku":"a","call":1}` || again != first || other != `{"sku":"b","call":2}` {
			t.Fatalf("outputs %s, %s, %s: want the second from the cache", first, again, other)
		}
		var detail string
		for _, ev := range inspected(t, r.store, cachedJob).History {
			if ev.Event == runtime.EventSucceeded {
				detail = ev.Detail
			}
		}
		if !strings.HasPrefix(detail, "cached output of job ") {
			t.Errorf("history of the cached activation: %q", detail)
		}
		r.clock.Advance(61 * time.Second)
		if late, _ := run("a"); late != `{"sku":"a","call":3}` {
			t.Errorf("after the TTL: %s, want a new call", late)
		}
	})
}
