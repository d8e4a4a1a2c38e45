package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// metrics are the engine's Prometheus metrics (docs/observability.md).
// Labels are bounded: flow names and aliases, definition hashes, outcome
// and failure kinds, schedule names; never a job id. Everything is
// counted after the commit it describes, so a rolled-back transaction
// counts nothing and a retried one counts once.
type metrics struct {
	unserved      *prometheus.CounterVec
	started       *prometheus.CounterVec
	finished      *prometheus.CounterVec
	retried       *prometheus.CounterVec
	compensations *prometheus.CounterVec
	activation    *prometheus.HistogramVec
	jobs          *prometheus.HistogramVec
	fenced        prometheus.Counter
	takeovers     prometheus.Counter
	timers        *prometheus.CounterVec
	ticks         *prometheus.CounterVec
	swept         *prometheus.CounterVec
}

// durationBuckets span a Pure node's milliseconds to a long job's hours.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, 12) // 1 ms to about 70 min

// newMetrics makes the engine's metrics and registers them with reg (none
// when nil), with a collector that reads the store's queues on each
// scrape. Engines of one process may share reg: the second finds the
// first's collectors and counts into them.
func newMetrics(reg prometheus.Registerer, s store.Store) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets}, labels)
	}
	m := &metrics{
		unserved: counter("flowgen_unserved_deliveries_total",
			"Deliveries this worker handed back (or, after 15 minutes, dead-lettered) because it has no definition of the job's flow version.", "flow", "definition"),
		started: counter("flowgen_activations_started_total",
			"Activation attempts this worker started running (a node call, or a switch, checkpoint, join ... deciding).", "flow", "node"),
		finished: counter("flowgen_activations_finished_total",
			"Activation outcomes this worker committed: outcome succeeded, failed or canceled, with the failure kind.", "flow", "node", "outcome", "kind"),
		retried: counter("flowgen_activations_retried_total",
			"Failed attempts this worker handed back for a later retry, by failure kind.", "flow", "node", "kind"),
		compensations: counter("flowgen_compensations_total",
			"Compensations (undo activations) this worker committed, by outcome.", "flow", "node", "outcome"),
		activation: histogram("flowgen_activation_duration_seconds",
			"From an activation's entry commit to the commit of its outcome.", "flow", "node"),
		jobs: histogram("flowgen_job_duration_seconds",
			"From a job's start to the commit that finished it, by final state.", "flow", "state"),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "flowgen_fenced_commits_total",
			Help: "Commits refused because this worker's job lease was no longer current (another worker took the job over)."}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "flowgen_lease_takeovers_total",
			Help: "Job leases this worker took from another worker whose lease had run out or been released."}),
		timers: counter("flowgen_timers_fired_total", "Sleep nodes woken by their timer.", "flow"),
		ticks: counter("flowgen_schedule_ticks_total",
			"Schedule ticks this worker handled: started a job, skipped (overlap), or dropped (missed beyond catch-up).", "schedule", "result"),
		swept: counter("flowgen_swept_total",
			"What the retention sweeper deleted: finished jobs, expired records, blobs and acknowledged message ids.", "what"),
	}
	if reg == nil {
		return m
	}
	m.unserved = register(reg, m.unserved)
	m.started = register(reg, m.started)
	m.finished = register(reg, m.finished)
	m.retried = register(reg, m.retried)
	m.compensations = register(reg, m.compensations)
	m.activation = register(reg, m.activation)
	m.jobs = register(reg, m.jobs)
	m.fenced = register(reg, m.fenced)
	m.takeovers = register(reg, m.takeovers)
	m.timers = register(reg, m.timers)
	m.ticks = register(reg, m.ticks)
	m.swept = register(reg, m.swept)
	register(reg, prometheus.Collector(&queueCollector{store: s}))
	return m
}

// register registers c with reg, or returns the collector of the same
// description registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

// flowName is the flow name of a flow key (name#hash) or reference.
func flowName(flow string) string {
	name, _, _ := strings.Cut(flow, flowKeySep)
	return name
}

// countEntered counts what the committed entries of entered did: the
// hand-backs for want of a flow definition, the leases taken over.
func (m *metrics) countEntered(entered []*entry) {
	for _, en := range entered {
		if en.unserved {
			name, hash, _ := strings.Cut(en.t.Flow, flowKeySep)
			m.unserved.WithLabelValues(name, hash).Inc()
		}
		if en.tookOver {
			m.takeovers.Inc()
		}
	}
}

// committed counts what a committed steps commit recorded for en: its
// outcome and duration and, when it closed the job, the job's.
func (m *metrics) committed(en *entry, now time.Time) {
	flow := flowName(en.t.Flow)
	if res := en.res; res != nil && en.result != nil { // a result this commit wrote
		outcome, kind := "succeeded", ""
		if res.failed() {
			outcome, kind = "failed", string(res.ErrKind)
			if res.ErrKind == runtype.Canceled {
				outcome = "canceled"
			}
		}
		m.finished.WithLabelValues(flow, en.t.Node, outcome, kind).Inc()
		if en.t.Kind == runtype.Undo {
			m.compensations.WithLabelValues(flow, en.t.Node, outcome).Inc()
		}
		if !en.entered.IsZero() {
			m.activation.WithLabelValues(flow, en.t.Node).Observe(now.Sub(en.entered).Seconds())
		}
		if en.t.Resume == timerResume {
			m.timers.WithLabelValues(flow).Inc()
		}
	}
	if st := en.status; st != nil {
		m.jobs.WithLabelValues(flow, string(st.State)).Observe(st.Finished.Sub(st.Started).Seconds())
	}
}

// queueCollector reads the work stream's backlog and the dead letters
// from the store on each scrape.
type queueCollector struct{ store store.Store }

var (
	readyDesc = prometheus.NewDesc("flowgen_queue_ready_messages",
		"Messages of the stream visible now, waiting for a worker.", []string{"stream"}, nil)
	oldestDesc = prometheus.NewDesc("flowgen_queue_oldest_ready_age_seconds",
		"How long the oldest message visible now has been waiting (0 when none).", []string{"stream"}, nil)
	pendingDesc = prometheus.NewDesc("flowgen_queue_pending_messages",
		"Messages of the stream not yet acknowledged, visible or not (for the dead-letter stream: the dead letters).", []string{"stream"}, nil)
)

// Describe implements prometheus.Collector.
func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- readyDesc
	ch <- oldestDesc
	ch <- pendingDesc
}

// Collect implements prometheus.Collector; a store that cannot be read
// reports the error as invalid metrics.
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, stream := range []string{runtype.WorkStream, runtype.WorkStream + store.DeadLetterSuffix} {
		b, err := q.store.Backlog(ctx, stream)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(pendingDesc, err)
			continue
		}
		age := 0.0
		if !b.OldestReady.IsZero() {
			age = max(b.Now.Sub(b.OldestReady).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, float64(b.Ready), stream)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age, stream)
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(b.Pending), stream)
	}
}
