// Package prommetrics exports the engine's metrics (runtime/observe) to
// Prometheus, and the store's queues with them, read on each scrape.
package prommetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// durationBuckets span a Pure node's milliseconds to a long job's hours.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, 12) // 1 ms to about 70 min

// Metrics is observe.Metrics backed by Prometheus collectors.
type Metrics struct {
	counters   []*prometheus.CounterVec
	histograms []*prometheus.HistogramVec
}

var _ observe.Metrics = (*Metrics)(nil)

// New registers every metric of the engine with reg, and a collector
// that reads s's work queue and dead letters on each scrape (none when s
// is nil). Engines of one process may share reg: a second New finds the
// first's collectors and counts into them. Counters without labels are
// exported from the start, at 0.
func New(reg prometheus.Registerer, s store.Store) *Metrics {
	m := &Metrics{}
	for _, c := range observe.Counters() {
		spec := c.Spec()
		v := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: spec.Name, Help: spec.Help}, spec.Labels))
		if len(spec.Labels) == 0 {
			v.WithLabelValues()
		}
		m.counters = append(m.counters, v)
	}
	for _, h := range observe.Histograms() {
		spec := h.Spec()
		m.histograms = append(m.histograms, register(reg, prometheus.NewHistogramVec(
			prometheus.HistogramOpts{Name: spec.Name, Help: spec.Help, Buckets: durationBuckets}, spec.Labels)))
	}
	if s != nil {
		register(reg, prometheus.Collector(&queueCollector{store: s}))
	}
	return m
}

// Add implements observe.Metrics.
func (m *Metrics) Add(c observe.Counter, n float64, labels ...string) {
	m.counters[c].WithLabelValues(labels...).Add(n)
}

// Observe implements observe.Metrics.
func (m *Metrics) Observe(h observe.Histogram, seconds float64, labels ...string) {
	m.histograms[h].WithLabelValues(labels...).Observe(seconds)
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
