package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// flaky fails with kind for the first failures calls, then succeeds.
func flaky(owner RetryOwner, kind ErrorKind, failures int, calls *int) Runner {
	info := NodeInfo{ID: "t.flaky", RetryOwner: owner, Retry: RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaxInterval: 3 * time.Second, MaxAttempts: 4,
	}}
	return Typed(info, func(ctx *Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
		*calls++
		if *calls <= failures {
			return nil, Errorf(kind, "failure %d", *calls)
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
}

func runFlaky(t *testing.T, owner RetryOwner, kind ErrorKind, failures int) (JobStatus, int) {
	t.Helper()
	r := newRig(t)
	var calls int
	e := New(r.store, Options{Owner: "w", Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second})
	if err := e.Register(&Flow{Name: "f", Nodes: []*FlowNode{{Alias: "n", Runner: flaky(owner, kind, failures, &calls)}}}); err != nil {
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
	st, calls := runFlaky(t, RetryOrchestrator, Transient, 2)
	if st.State != StateSucceeded || calls != 3 {
		t.Fatalf("state %s after %d calls, want succeeded after 3", st.State, calls)
	}
}

func TestRetriesStopAtMaxAttempts(t *testing.T) {
	t.Parallel()
	st, calls := runFlaky(t, RetryOrchestrator, Transient, 10)
	if st.State != StateFailed || calls != 4 || !strings.Contains(strings.Join(st.Errors, ";"), "failure 4") {
		t.Fatalf("state %s after %d calls (%v), want failed after 4", st.State, calls, st.Errors)
	}
	// The kind is said once: "n@: Transient: failure 4".
	if want := "n@: Transient: failure 4"; len(st.Errors) != 1 || st.Errors[0] != want {
		t.Fatalf("errors %q, want %q", st.Errors, want)
	}
}

func TestNoOrchestratorRetryForPermanentOrConnectorOwned(t *testing.T) {
	t.Parallel()
	if st, calls := runFlaky(t, RetryOrchestrator, Permanent, 1); st.State != StateFailed || calls != 1 {
		t.Fatalf("permanent failure retried: %s after %d calls", st.State, calls)
	}
	// The connector owns retries: the orchestrator must not retry as well.
	if st, calls := runFlaky(t, RetryConnector, Transient, 1); st.State != StateFailed || calls != 1 {
		t.Fatalf("connector-owned failure retried by the orchestrator: %s after %d calls", st.State, calls)
	}
}

func TestRetryPolicyBackoff(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2, MaxInterval: time.Second, MaxAttempts: 10}
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
	p.NonRetryable = []ErrorKind{Auth}
	if p.Retryable(Auth, 1) || p.Retryable(SchemaMismatch, 1) || !p.Retryable(RateLimited, 1) || p.Retryable(Transient, 10) {
		t.Fatal("retryable classification")
	}
}

func TestPanickingNodeFailsItsActivationNotTheWorker(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{})
	boom := Typed(NodeInfo{ID: "t.boom"}, func(ctx *Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
		panic("nil map write")
	})
	if err := e.Register(&Flow{Name: "f", Nodes: []*FlowNode{{Alias: "n", Runner: boom}}}); err != nil {
		t.Fatal(err)
	}
	job, _ := e.Start(context.Background(), "f", json.RawMessage(`{}`))
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Status(context.Background(), job)
	if st.State != StateFailed || !strings.Contains(st.Errors[0], "panicked: nil map write") {
		t.Fatalf("%+v", st)
	}
	var ce *Error
	if !errors.As(Errorf(Permanent, "x"), &ce) {
		t.Fatal("Errorf is not an *Error")
	}
}
