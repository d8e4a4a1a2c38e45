//go:build !race

// These tests compile a dozen modules; under the race detector wazero's
// compiler takes half a minute a module, so they run without it (make unit
// runs this package twice), and pool_test.go covers the concurrent paths
// under it.

package wasmhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/confined/sleeper"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/confined/spin"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/confined/writer"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/hostview"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/override"
)

// TestDeterministicByConstruction: a Strict connector that reads the
// local zone (directly and through a template), the clock through a
// function value, GOMAXPROCS through runtime/metrics, map order and
// random numbers returns, confined, the same bytes for the same
// activation on every fresh instance, whatever the host's zone; natively
// two runs differ. Its map order and random numbers follow its input.
func TestDeterministicByConstruction(t *testing.T) {
	node := hostview.NewNode(&hostview.Connector{})
	native1, _ := runNode(node, runtime.Capabilities{}, map[string]string{"file": "a"})
	native2, _ := runNode(node, runtime.Capabilities{}, map[string]string{"file": "a"})
	if native1 == native2 {
		t.Fatalf("natively two runs agree, so the case is not real: %s", native1)
	}

	wasm := mustBuild(t, "testdata/escapes/hostview", node.Info())
	fresh := func() *wasmhost.Module {
		m, err := newHost(t, &events{}).Load(context.Background(), wasm, node.Info(), "")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first, err := runNode(fresh().Runner(), runtime.Capabilities{}, map[string]string{"file": "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"zone UTC", "template 2023-11-14T22:13:20Z UTC", "now 2026-01-02T03:04:05Z", "gomaxprocs 1/1"} {
		if !strings.Contains(first, want) {
			t.Errorf("confined result lacks %q: %s", want, first)
		}
	}
	t.Setenv("TZ", "Asia/Kathmandu")
	for i := range 3 {
		again, err := runNode(fresh().Runner(), runtime.Capabilities{}, map[string]string{"file": "a"})
		if err != nil || again != first {
			t.Errorf("fresh instance %d runs the same activation differently:\n%s\n%s (%v)", i, first, again, err)
		}
	}
	other, _ := runNode(fresh().Runner(), runtime.Capabilities{}, map[string]string{"file": "c"})
	if other == first {
		t.Errorf("another input drew the same map order and random numbers: %s", other)
	}
}

// TestLoadRefuses: a module is refused at load when it is not the
// certified one, imports a capability its spec does not declare, or is
// not a module at all; each refusal says why.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	info := override.NewNode(&override.Connector{}).Info()
	wasm := mustBuild(t, "testdata/escapes/override", info)
	h := newHost(t, &events{})
	ctx := context.Background()

	if _, err := h.Load(ctx, wasm, info, wasmhost.Digest(wasm)); err != nil {
		t.Fatalf("the certified module: %v", err)
	}
	tampered := append([]byte(nil), wasm...)
	tampered[len(tampered)/2] ^= 1
	_, err := h.Load(ctx, tampered, info, wasmhost.Digest(wasm))
	var le *wasmhost.LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "these are not the certified bytes") {
		t.Errorf("a module whose digest differs from the certified one: %v", err)
	}

	// A connector that writes, loaded under a spec that only reads.
	writerInfo := writer.NewNode(&writer.Connector{}).Info()
	wasmWriter := mustBuild(t, "testdata/confined/writer", writerInfo)
	if _, err := h.Load(ctx, wasmWriter, writerInfo, ""); err != nil {
		t.Fatalf("the writer under its own spec: %v", err)
	}
	reader := writerInfo
	reader.Capabilities, reader.Effects = []string{string(flowtype.HTTPRead)}, flowtype.ReadOnly
	_, err = h.Load(ctx, wasmWriter, reader, "")
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "it imports flowgen.http_do, the host function of capability http.write, which the spec does not declare") {
		t.Errorf("a module importing an undeclared capability: %v", err)
	}

	if _, err := h.Load(ctx, []byte("not a module"), info, ""); !errors.As(err, &le) || !strings.Contains(err.Error(), "does not compile") {
		t.Errorf("bytes that are no module: %v", err)
	}
}

// TestInstanceLimits: a module that spins is stopped at its deadline, one
// that allocates without end at its memory limit, one that panics or
// exits fails its activation, one that returns too much is refused; none
// takes the host down, and the next activation runs.
func TestInstanceLimits(t *testing.T) {
	t.Parallel()
	node := spin.NewNode(&spin.Connector{})
	wasm := mustBuild(t, "testdata/confined/spin", node.Info())
	var ev events
	h, err := wasmhost.New(context.Background(), wasmhost.Options{Report: ev.add, MemoryLimit: 160 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	m, err := h.Load(context.Background(), wasm, node.Info(), "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(do string, timeout time.Duration) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := m.Runner().Run(runtime.NewActivationContext(ctx, "", 1, runtime.Capabilities{}, nil, logicalTime), nil, json.RawMessage(`{"do":"`+do+`"}`))
		return string(out), err
	}
	start := time.Now()
	if _, err := run("spin", time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("spin: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("a spinning module was stopped only after %s", d)
	}
	for _, c := range []struct{ do, want string }{
		{"allocate", "crashed"},
		{"panic", "panic: assignment to entry in nil map"},
		{"exit", "exited with code 3"},
		{"big", "exceeds"},
	} {
		if _, err := run(c.do, 30*time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.do, err, c.want)
		}
		if out, err := run("echo", 30*time.Second); err != nil || !strings.Contains(out, "fine") {
			t.Errorf("after %s the next activation: %s %v", c.do, out, err)
		}
	}
	if !ev.has(wasmhost.EventExit, "exited with code 3") {
		t.Errorf("the exit was not reported: %v", ev.list())
	}
}

// TestSkippedSleepsMoveTheClock: a host that skips sleeps
// (Options.VirtualSleep, certification's) still moves the clock
// capability by what the module slept, as a real sleep in production
// would, so a connector cannot tell the two apart by sleeping between
// two readings, even under a clock that stands still.
func TestSkippedSleepsMoveTheClock(t *testing.T) {
	t.Parallel()
	node := sleeper.NewNode(&sleeper.Connector{})
	wasm := mustBuild(t, "testdata/confined/sleeper", node.Info())
	moved := func(virtual bool, clock runtime.Clock, sleep time.Duration) (time.Duration, time.Duration) {
		t.Helper()
		h, err := wasmhost.New(context.Background(), wasmhost.Options{VirtualSleep: virtual})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close(context.Background())
		m, err := h.Load(context.Background(), wasm, node.Info(), "")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rc := runtime.NewActivationContext(ctx, "", 1, runtime.Capabilities{Clock: clock}, nil, logicalTime)
		start := time.Now()
		out, err := m.Runner().Run(rc, nil, json.RawMessage(fmt.Sprintf(`{"sleepMillis":%d}`, sleep.Milliseconds())))
		if err != nil {
			t.Fatal(err)
		}
		var o struct{ MovedMillis int64 }
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatal(err)
		}
		return time.Duration(o.MovedMillis) * time.Millisecond, time.Since(start)
	}
	// Virtual: an hour's sleep under a clock that stands still.
	got, took := moved(true, standingClock{logicalTime}, time.Hour)
	if got < time.Hour {
		t.Errorf("under a host that skips sleeps, the clock moved %s across a sleep of an hour", got)
	}
	if took > 5*time.Minute {
		t.Errorf("the skipped sleep took %s", took)
	}
	// Virtual, under a clock that keeps its own time: the clock takes
	// the sleep.
	keeping := &keepingClock{t: logicalTime}
	if got, _ := moved(true, keeping, time.Hour); got < time.Hour || keeping.slept < time.Hour {
		t.Errorf("a clock that keeps its own time moved %s and was told of %s across a sleep of an hour", got, keeping.slept)
	}
	// Real: the sleep waits, and the real clock moves by it, no more.
	got, took = moved(false, realClock{}, 300*time.Millisecond)
	if got < 300*time.Millisecond || got > took {
		t.Errorf("under a host that sleeps, the clock moved %s across a sleep of 300ms that took %s", got, took)
	}
}

// standingClock always reads the same time.
type standingClock struct{ t time.Time }

func (c standingClock) Now() time.Time { return c.t }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// keepingClock keeps its own time and takes the sleeps a host skips.
type keepingClock struct {
	t     time.Time
	slept time.Duration
}

func (c *keepingClock) Now() time.Time { return c.t }

func (c *keepingClock) Slept(d time.Duration) bool {
	c.t, c.slept = c.t.Add(d), c.slept+d
	return true
}
