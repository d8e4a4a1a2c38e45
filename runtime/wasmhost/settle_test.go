//go:build !race

package wasmhost_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/settle"
)

// writes records the KV writes of one activation.
type writes struct {
	mu   sync.Mutex
	keys []string
}

func (w *writes) Put(_ context.Context, key string, _ []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, key)
	return nil
}

func (w *writes) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.keys)
}

// TestActivationsSettle: an activation is over when nothing it started can
// still run. A timer it leaves fires before Run's result reaches the
// engine, with the activation's capabilities, so its effect is the
// activation's own and never a later one's; timers that keep setting
// themselves again never settle, nor a goroutine that waits for ever,
// and their instance is closed.
func TestActivationsSettle(t *testing.T) {
	t.Parallel()
	info := settle.NewNode(&settle.Connector{}).Info()
	wasm := mustBuild(t, "testdata/settle", info)
	var ev events
	h, err := wasmhost.New(context.Background(), wasmhost.Options{CacheDir: sharedCache(t), Report: ev.add})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	m, err := h.Load(context.Background(), wasm, info, "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(id, do string) []string {
		t.Helper()
		var w writes
		input, _ := json.Marshal(map[string]string{"id": id, "do": do})
		rc := runtime.NewActivationContext(context.Background(), "key-"+id, 1, runtime.Capabilities{KVWrite: &w}, nil, logicalTime)
		if _, err := m.Runner().Run(rc, nil, input); err != nil {
			t.Fatalf("%s: %v", do, err)
		}
		return w.list()
	}
	if got := run("a", "timer"); !slices.Equal(got, []string{"late/a"}) {
		t.Errorf("a timer an hour after Run: the activation wrote %q, want its own late write", got)
	}
	if got := run("b", "nothing"); len(got) != 0 {
		t.Errorf("the next activation wrote %q: an earlier one's timer fired in it", got)
	}
	got := run("c", "ticker")
	if len(got) == 0 || len(got) > wasmabi.SettleWaits+1 || !ev.has(wasmhost.EventGoroutines, "timers kept firing after Run returned") {
		t.Errorf("a timer that sets itself again: %d writes, events %v", len(got), ev.list())
	}
	if got := run("e", "stuck"); len(got) != 0 || !ev.has(wasmhost.EventGoroutines, "1 goroutine(s) still running after Run returned") {
		t.Errorf("a goroutine that waits for ever: writes %q, events %v", got, ev.list())
	}
	for i := range 3 {
		if got := run("d", "nothing"); len(got) != 0 {
			t.Fatalf("activation %d after the ticker wrote %q", i, got)
		}
	}
}
