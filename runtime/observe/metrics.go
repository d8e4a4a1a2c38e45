package observe

// Counter is one of the engine's counters. Its Spec names it for an
// exporter; the set is closed (Counters), so an exporter can declare
// every one before the first count.
type Counter uint8

// The engine's counters (docs/observability.md).
const (
	Unserved Counter = iota
	Started
	Finished
	Retried
	Compensations
	Fenced
	Takeovers
	Timers
	Ticks
	Swept
	numCounters
)

// Histogram is one of the engine's duration histograms, in seconds.
type Histogram uint8

// The engine's histograms.
const (
	ActivationDuration Histogram = iota
	JobDuration
	numHistograms
)

// Spec describes a metric: its exported name, its help text and the
// names of its labels, in the order Add and Observe take their values.
// Labels are bounded: never a job id.
type Spec struct {
	Name, Help string
	Labels     []string
}

var counterSpecs = [numCounters]Spec{
	Unserved: {"flowgen_unserved_deliveries_total",
		"Deliveries this worker handed back (or, after 15 minutes, dead-lettered) because it has no definition of the job's flow version.", []string{"flow", "definition"}},
	Started: {"flowgen_activations_started_total",
		"Activation attempts this worker started running (a node call, or a switch, checkpoint, join ... deciding).", []string{"flow", "node"}},
	Finished: {"flowgen_activations_finished_total",
		"Activation outcomes this worker committed: outcome succeeded, failed or canceled, with the failure kind.", []string{"flow", "node", "outcome", "kind"}},
	Retried: {"flowgen_activations_retried_total",
		"Failed attempts this worker handed back for a later retry, by failure kind.", []string{"flow", "node", "kind"}},
	Compensations: {"flowgen_compensations_total",
		"Compensations (undo activations) this worker committed, by outcome.", []string{"flow", "node", "outcome"}},
	Fenced: {"flowgen_fenced_commits_total",
		"Commits refused because this worker's job lease was no longer current (another worker took the job over).", nil},
	Takeovers: {"flowgen_lease_takeovers_total",
		"Job leases this worker took from another worker whose lease had run out or been released.", nil},
	Timers: {"flowgen_timers_fired_total", "Sleep nodes woken by their timer.", []string{"flow"}},
	Ticks: {"flowgen_schedule_ticks_total",
		"Schedule ticks this worker handled: started a job, skipped (overlap), or dropped (missed beyond catch-up).", []string{"schedule", "result"}},
	Swept: {"flowgen_swept_total",
		"What the retention sweeper deleted: finished jobs, expired records, blobs and acknowledged message ids.", []string{"what"}},
}

var histogramSpecs = [numHistograms]Spec{
	ActivationDuration: {"flowgen_activation_duration_seconds",
		"From an activation's entry commit to the commit of its outcome.", []string{"flow", "node"}},
	JobDuration: {"flowgen_job_duration_seconds",
		"From a job's start to the commit that finished it, by final state.", []string{"flow", "state"}},
}

// Spec describes c.
func (c Counter) Spec() Spec { return counterSpecs[c] }

// Spec describes h.
func (h Histogram) Spec() Spec { return histogramSpecs[h] }

// Counters are every counter the engine tells, in a fixed order.
func Counters() []Counter {
	cs := make([]Counter, numCounters)
	for i := range cs {
		cs[i] = Counter(i)
	}
	return cs
}

// Histograms are every histogram the engine tells, in a fixed order.
func Histograms() []Histogram {
	hs := make([]Histogram, numHistograms)
	for i := range hs {
		hs[i] = Histogram(i)
	}
	return hs
}
