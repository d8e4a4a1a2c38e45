package wasmhost_test

import (
	"context"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/confined/spin"
)

// TestPoolUnderConcurrency: activations running at once, more than the
// pool keeps, each get an instance of their own and their own result,
// also when some of them crash their instance. The race detector runs
// this one (see host_test.go).
func TestPoolUnderConcurrency(t *testing.T) {
	t.Parallel()
	node := spin.NewNode(&spin.Connector{})
	wasm := mustBuild(t, "testdata/confined/spin", node.Info())
	m, err := newHost(t, &events{}).Load(context.Background(), wasm, node.Info(), "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for g := range 24 {
		wg.Go(func() {
			do := []string{"echo", "echo", "panic"}[g%3]
			got, err := runNode(m.Runner(), runtime.Capabilities{}, map[string]string{"do": do})
			if do == "echo" && (err != nil || got != "fine") || do == "panic" && err == nil {
				mu.Lock()
				bad = append(bad, do+": "+got+" "+errString(err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("concurrent activations failed: %v", bad)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestInstanceServesAtMostItsActivations: one instance serves
// wasmabi.InstanceActivations activations in turn, then the pool closes
// it and the next activation starts another.
func TestInstanceServesAtMostItsActivations(t *testing.T) {
	t.Parallel()
	node := spin.NewNode(&spin.Connector{})
	wasm := mustBuild(t, "testdata/confined/spin", node.Info())
	m, err := newHost(t, &events{}).Load(context.Background(), wasm, node.Info(), "")
	if err != nil {
		t.Fatal(err)
	}
	echo := func() {
		t.Helper()
		if got, err := runNode(m.Runner(), runtime.Capabilities{}, map[string]string{"do": "echo"}); err != nil || got != "fine" {
			t.Fatalf("echo: %q %v", got, err)
		}
	}
	// Load started the first instance; it serves all but the last.
	for range wasmabi.InstanceActivations - 1 {
		echo()
	}
	if n := m.Idle(); n != 1 {
		t.Fatalf("%d idle instances after %d activations, want the one", n, wasmabi.InstanceActivations-1)
	}
	echo()
	if n := m.Idle(); n != 0 {
		t.Fatalf("the instance was kept after %d activations", wasmabi.InstanceActivations)
	}
	echo()
	if n := m.Idle(); n != 1 {
		t.Fatalf("no new instance served the next activation: %d idle", n)
	}
}
