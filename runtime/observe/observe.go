// Package observe is what the engine tells the outside about its work:
// counts and durations (Metrics) and the spans of jobs and activation
// attempts (Tracer). The runtime knows these two small interfaces only;
// Prometheus and OpenTelemetry adapt them from outside it
// (telemetry/prommetrics, telemetry/oteltraces), so a program that runs
// flows links neither unless it asks for them.
//
// Nothing the engine tells carries an input, an output or a job's data:
// labels and attributes are flow and node names, definition hashes,
// outcomes, failure kinds and ids.
package observe

import (
	"context"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// Metrics receives the engine's counts and durations. Everything is told
// after the commit it describes, so a rolled-back transaction tells
// nothing and a retried one tells once. Implementations must be safe for
// concurrent use and must not block.
type Metrics interface {
	// Add adds n to counter c under labels, given in the order of
	// c.Spec().Labels.
	Add(c Counter, n float64, labels ...string)
	// Observe records seconds in histogram h under labels, given in the
	// order of h.Spec().Labels.
	Observe(h Histogram, seconds float64, labels ...string)
}

// Tracer opens the spans of jobs and of activation attempts. Spans are
// passed between processes as W3C traceparent strings, which a job's
// meta keeps: a job's trace outlives any one process. Implementations
// must be safe for concurrent use.
type Tracer interface {
	// StartJob opens the span of a job being started, under ctx's span
	// if any, and returns its traceparent ("" when it is not traced) and
	// the function that ends it once the start committed (nil) or
	// failed.
	StartJob(ctx context.Context, job JobSpan) (traceparent string, end func(error))
	// StartActivation opens the span of one activation attempt under
	// parent (a traceparent; a new trace when "" or unreadable) and
	// returns ctx carrying it, so that work done under ctx (an HTTP
	// request of the node) nests under it, the span's own traceparent,
	// and the function that ends it with the attempt's outcome.
	StartActivation(ctx context.Context, parent string, a ActivationSpan) (context.Context, string, func(Outcome))
}

// JobSpan names the job a span is for.
type JobSpan struct {
	// Flow is the flow's name.
	Flow string
	// Job is the job's id.
	Job runtype.JobID
}

// ActivationSpan names the activation attempt a span is for.
type ActivationSpan struct {
	// Flow and Node name what runs.
	Flow, Node string
	// Activation is the activation's id within its job.
	Activation string
	// Kind is the activation's kind (a call, an undo, a join...).
	Kind string
	// Job is the job's id.
	Job runtype.JobID
	// Attempt counts deliveries of the activation, from 1.
	Attempt int
	// Worker is the engine's owner name.
	Worker string
}

// Outcome is how an activation attempt ended.
type Outcome struct {
	// State is one of succeeded, failed, retrying, parked or interrupted.
	State string
	// ErrorKind is the failure kind when State is failed.
	ErrorKind string
}

// Nop is Metrics and Tracer that tell nobody: what an engine uses when
// its options name none.
type Nop struct{}

// Add does nothing.
func (Nop) Add(Counter, float64, ...string) {}

// Observe does nothing.
func (Nop) Observe(Histogram, float64, ...string) {}

// StartJob does nothing and returns no traceparent.
func (Nop) StartJob(context.Context, JobSpan) (string, func(error)) { return "", func(error) {} }

// StartActivation does nothing and returns ctx as it was.
func (Nop) StartActivation(ctx context.Context, _ string, _ ActivationSpan) (context.Context, string, func(Outcome)) {
	return ctx, "", func(Outcome) {}
}
