package engine

import (
	"context"
	"sync"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Traces. A job's trace outlives any one process: starting a job opens
// and ends a span of its own, whose traceparent the job's meta keeps, and
// every activation attempt, on whichever worker, after any restart, is a
// span under it. A subflow's child job is started under the span of the
// parent's subflow activation, so one trace holds the whole tree. The
// spans go to an observe.Tracer; the engine knows them only by their
// traceparents.

// tracing is the engine's tracer and a cache of job traceparents.
type tracing struct {
	tracer observe.Tracer
	on     bool
	store  store.Store
	owner  string // the worker, an attribute of its spans
	// jobs caches each job's traceparent, which never changes; it is
	// cleared when it holds maxTracedJobs.
	mu   sync.Mutex
	jobs map[runtype.JobID]string
}

// maxTracedJobs bounds the cache of job traceparents.
const maxTracedJobs = 10_000

func newTracing(tr observe.Tracer, s store.Store, owner string) *tracing {
	if tr == nil {
		return &tracing{tracer: observe.Nop{}}
	}
	return &tracing{tracer: tr, on: true, store: s, owner: owner, jobs: map[runtype.JobID]string{}}
}

// startJob opens the span of a job being started, under ctx's span if
// any, and returns the traceparent to keep in its meta and the function
// that ends the span once the start committed or failed. With tracing off
// it returns "" and does nothing.
func (tr *tracing) startJob(ctx context.Context, flow string, job runtype.JobID) (string, func(error)) {
	if !tr.on {
		return "", func(error) {}
	}
	tp, end := tr.tracer.StartJob(ctx, observe.JobSpan{Flow: flowName(flow), Job: job})
	tr.remember(job, tp)
	return tp, end
}

func (tr *tracing) remember(job runtype.JobID, tp string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.jobs) >= maxTracedJobs {
		clear(tr.jobs)
	}
	tr.jobs[job] = tp
}

// jobContext is the traceparent of job's start, from the cache or the
// job's meta; "" when the job has none (started untraced).
func (tr *tracing) jobContext(ctx context.Context, job runtype.JobID) string {
	tr.mu.Lock()
	tp, ok := tr.jobs[job]
	tr.mu.Unlock()
	if ok {
		return tp
	}
	var meta struct {
		Trace string `json:"trace"`
	}
	if found, err := lookupJSON(ctx, tr.store, protocol.MetaKey(job), &meta); err != nil || !found {
		return ""
	}
	tr.remember(job, meta.Trace)
	return meta.Trace
}

// activation opens the span of one attempt of en's activation, under its
// job's span, and returns ctx carrying it (node code's HTTP calls become
// its children) and the function that ends it with the attempt's outcome.
func (tr *tracing) activation(ctx context.Context, en *entry) (context.Context, func(result, error)) {
	if !tr.on {
		return ctx, func(result, error) {}
	}
	t := en.t
	ctx, tp, end := tr.tracer.StartActivation(ctx, tr.jobContext(ctx, en.job), observe.ActivationSpan{
		Flow: flowName(t.Flow), Node: t.Node, Activation: t.Act, Kind: t.Kind.String(),
		Job: en.job, Attempt: en.m.Attempt, Worker: tr.owner,
	})
	en.span = tp
	return ctx, func(res result, err error) {
		switch {
		case err != nil:
			end(observe.Outcome{State: outcomeOf(err)})
		case res.Failed():
			end(observe.Outcome{State: "failed", ErrorKind: string(res.ErrKind)})
		default:
			end(observe.Outcome{State: "succeeded"})
		}
	}
}

// outcomeOf names how an attempt that returned no result ended.
func outcomeOf(err error) string {
	switch err {
	case errRetryLater:
		return "retrying"
	case errParked, errStartChild, errSleeping:
		return "parked"
	}
	return "interrupted"
}
