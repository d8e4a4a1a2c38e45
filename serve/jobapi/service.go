// Package jobapi is the job control API of a local flowgen server: one
// process owns the embedded store (flowgen serve) and every other command
// reaches its jobs through this API, found through a file next to the
// store. The same Service is the engine itself when no server runs, and
// one conformance suite runs against both.
package jobapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Service is what a job command needs: *engine.Engine implements it
// directly on a store, *Client through a running server.
type Service interface {
	// Start creates a job of flow with input; input is checked against the
	// flow's input schema first when the service knows it.
	Start(ctx context.Context, flow string, input json.RawMessage) (runtime.JobID, error)
	// StartOnce is Start under a job key: the first start with key creates
	// the job and reports true, every later one returns it and false
	// (engine.Engine.StartOnce).
	StartOnce(ctx context.Context, flow, key string, input json.RawMessage) (runtime.JobID, bool, error)
	Status(ctx context.Context, job runtime.JobID) (runtime.JobStatus, error)
	Inspect(ctx context.Context, job runtime.JobID) (*runtime.Inspection, error)
	Jobs(ctx context.Context, q runtime.JobQuery) (runtime.JobList, error)
	// Waiting returns the checkpoint nodes of job waiting for a decision.
	Waiting(ctx context.Context, job runtime.JobID) ([]string, error)
	Pause(ctx context.Context, job runtime.JobID) error
	Resume(ctx context.Context, job runtime.JobID) error
	Kill(ctx context.Context, job runtime.JobID, reason string) error
	// Signal records a decision at the checkpoint node and returns how
	// many waiting activations it resumed.
	Signal(ctx context.Context, job runtime.JobID, node string, d runtime.Decision) (int, error)
	// DeadLetters lists the dead letters, oldest first.
	DeadLetters(ctx context.Context) ([]runtime.DeadLetter, error)
	// RequeueDeadLetter and FailDeadLetter take a dead letter and return
	// the message that carries its activation on (engine.Engine's).
	RequeueDeadLetter(ctx context.Context, id runtime.MessageID) (runtime.MessageID, error)
	FailDeadLetter(ctx context.Context, id runtime.MessageID, reason string) (runtime.MessageID, error)
}

var _ Service = (*engine.Engine)(nil)

// Outcome is where a job stands when Await returns.
type Outcome struct {
	Status runtime.JobStatus
	// Waiting lists the checkpoints the job waits at (while it runs).
	Waiting []string
	// Finished is false when the job still runs: it waits at a checkpoint
	// or the timeout passed.
	Finished bool
}

// Await polls the job until it finishes, waits at a checkpoint (a decision
// is needed before it can go on) or timeout passes.
func Await(ctx context.Context, svc Service, job runtime.JobID, timeout time.Duration) (Outcome, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := svc.Status(ctx, job)
		if err != nil {
			return Outcome{}, err
		}
		if st.Done() {
			return Outcome{Status: st, Finished: true}, nil
		}
		waiting, err := svc.Waiting(ctx, job)
		if err != nil {
			return Outcome{}, err
		}
		if len(waiting) > 0 || time.Now().After(deadline) {
			return Outcome{Status: st, Waiting: waiting}, nil
		}
		select {
		case <-ctx.Done():
			return Outcome{Status: st}, ctx.Err()
		case <-time.After(awaitPoll):
		}
	}
}

const awaitPoll = 25 * time.Millisecond

// SignalAll records decision d at checkpoint node in every job that q
// matches and that waits there (q.State is taken as "waiting"), page by
// page, and returns how many activations it resumed and in how many jobs.
// Each job's signal commits on its own: a job that stops waiting before
// its turn is left out, and an error stops the walk with the jobs before
// it signalled. It works on the engine itself and through a server alike.
func SignalAll(ctx context.Context, svc Service, q runtime.JobQuery, node string, d runtime.Decision) (resumed, jobs int, err error) {
	q.State, q.Limit = "waiting", 1000
	for {
		list, err := svc.Jobs(ctx, q)
		if err != nil {
			return resumed, jobs, err
		}
		for _, j := range list.Jobs {
			if !slices.Contains(j.Waiting, node) {
				continue
			}
			job, err := runtime.ParseJobID(j.Job)
			if err != nil {
				return resumed, jobs, err
			}
			n, err := svc.Signal(ctx, job, node, d)
			if errors.Is(err, store.ErrNotFound) {
				continue // decided or finished meanwhile
			}
			if err != nil {
				return resumed, jobs, fmt.Errorf("signal %s in job %s: %w", node, job, err)
			}
			resumed, jobs = resumed+n, jobs+1
		}
		if list.Next == "" {
			return resumed, jobs, nil
		}
		q.After = list.Next
	}
}
