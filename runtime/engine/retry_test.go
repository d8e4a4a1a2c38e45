package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// flaky fails with kind for the first failures calls, then succeeds.
func flaky(owner runtime.RetryOwner, kind runtime.ErrorKind, failures int, calls *int) runtime.Runner {
	info := runtime.NodeInfo{ID: "t.flaky", RetryOwner: owner, Retry: runtime.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaxInterval: 3 * time.Second, MaxAttempts: 4,
	}}
	return runtime.Typed(info, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
		*calls++
		if *calls <= failures {
			return nil, runtime.Errorf(kind, "failure %d", *calls)
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
}

func runFlaky(t *testing.T, owner runtime.RetryOwner, kind runtime.ErrorKind, failures int) (runtime.JobStatus, int) {
	t.Helper()
	r := newRig(t)
	var calls int
	e := New(r.store, Options{Owner: "w", Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second})
	if err := e.Register(&runtime.Flow{Name: "f", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: flaky(owner, kind, failures, &calls)}}}); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(context.Background(), "f", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 { // each round: work what is visible, then let backoff pass
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(4 * time.Second)
	}
	st, err := e.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return st, calls
}

func TestOrchestratorRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	st, calls := runFlaky(t, runtime.RetryOrchestrator, runtime.Transient, 2)
	if st.State != runtime.StateSucceeded || calls != 3 {
		t.Fatalf("state %s after %d calls, want succeeded after 3", st.State, calls)
	}
}

func TestRetriesStopAtMaxAttempts(t *testing.T) {
	t.Parallel()
	st, calls := runFlaky(t, runtime.RetryOrchestrator, runtime.Transient, 10)
	if st.State != runtime.StateFailed || calls != 4 || !strings.Contains(strings.Join(st.Errors, ";"), "failure 4") {
		t.Fatalf("state %s after %d calls (%v), want failed after 4", st.State, calls, st.Errors)
	}
	// The kind is said once: "n@: Transient: failure 4".
	if want := "n@: Transient: failure 4"; len(st.Errors) != 1 || st.Errors[0] != want {
		t.Fatalf("errors %q, want %q", st.Errors, want)
	}
}

func TestNoOrchestratorRetryForPermanentOrConnectorOwned(t *testing.T) {
	t.Parallel()
	if st, calls := runFlaky(t, runtime.RetryOrchestrator, runtime.Permanent, 1); st.State != runtime.StateFailed || calls != 1 {
		t.Fatalf("permanent failure retried: %s after %d calls", st.State, calls)
	}
	// The connector owns retries: the orchestrator must not retry as well.
	if st, calls := runFlaky(t, runtime.RetryConnector, runtime.Transient, 1); st.State != runtime.StateFailed || calls != 1 {
		t.Fatalf("connector-owned failure retried by the orchestrator: %s after %d calls", st.State, calls)
	}
}

func TestRetryPolicyBackoff(t *testing.T) {
	t.Parallel()
	p := runtime.RetryPolicy{InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2, MaxInterval: time.Second, MaxAttempts: 10}
	var got []time.Duration
	for attempt := 2; attempt <= 7; attempt++ {
		got = append(got, p.Backoff(attempt))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoff %v, want %v ms", got, want)
		}
	}
	p.NonRetryable = []runtime.ErrorKind{runtime.Auth}
	if p.Retryable(runtime.Auth, 1) || p.Retryable(runtime.SchemaMismatch, 1) || !p.Retryable(runtime.RateLimited, 1) || p.Retryable(runtime.Transient, 10) {
		t.Fatal("retryable classification")
	}
}

func TestPanickingNodeFailsItsActivationNotTheWorker(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{})
	boom := runtime.Typed(runtime.NodeInfo{ID: "t.boom"}, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
		panic("nil map write")
	})
	if err := e.Register(&runtime.Flow{Name: "f", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: boom}}}); err != nil {
		t.Fatal(err)
	}
	job, _ := e.Start(context.Background(), "f", json.RawMessage(`{}`))
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Status(context.Background(), job)
	if st.State != runtime.StateFailed || !strings.Contains(st.Errors[0], "panicked: nil map write") {
		t.Fatalf("%+v", st)
	}
	var ce *runtime.Error
	if !errors.As(runtime.Errorf(runtime.Permanent, "x"), &ce) {
		t.Fatal("Errorf is not an *Error")
	}
}
