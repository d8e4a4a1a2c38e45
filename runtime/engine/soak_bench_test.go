package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// BenchmarkRetentionSoak runs jobs continuously on each store (a bbolt
// file; a PostgreSQL schema, whose size is its tables' with indexes and
// TOAST) with a short retention for five minutes (FLOWGEN_SOAK overrides, as a Go
// duration) and reports the store file's size and the process's RSS at
// the end against their size after the first two fifths (warm-up: the
// first jobs' retention and the one-minute horizon of acknowledged ids
// run out in it). Flat is a ratio near 1. The baseline, in the same run,
// is the same load with retention off for one fifth of the time: how fast
// the file grows when nothing is deleted.
func BenchmarkRetentionSoak(b *testing.B) {
	total := 5 * time.Minute
	if s := os.Getenv("FLOWGEN_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("FLOWGEN_SOAK=%q: %v", s, err)
		}
		total = d
	}
	warm := total * 2 / 5
	for _, sb := range soakStores {
		b.Run(sb.name, func(b *testing.B) {
			for range b.N {
				kept := soak(b, sb, total, warm, Options{Retention: 20 * time.Second, SweepEvery: 2 * time.Second})
				grew := soak(b, sb, total/5, total/5, Options{Retention: -1, SweepEvery: -1})
				b.ReportMetric(float64(kept.jobs)/total.Seconds(), "jobs/s")
				b.ReportMetric(mib(kept.storeWarm), "store_MiB_after_warmup")
				b.ReportMetric(mib(kept.storeEnd), "store_MiB_at_end")
				b.ReportMetric(float64(kept.storeEnd)/float64(kept.storeWarm), "store_end/warmup")
				b.ReportMetric(mib(kept.rssWarm), "rss_MiB_after_warmup")
				b.ReportMetric(mib(kept.rssEnd), "rss_MiB_at_end")
				b.ReportMetric(float64(kept.rssEnd)/float64(kept.rssWarm), "rss_end/warmup")
				b.ReportMetric(mib(kept.storeEnd-kept.storeWarm)/(total-warm).Minutes(), "MiB/min_growth_with_retention")
				b.ReportMetric(mib(grew.storeEnd-grew.storeStart)/(total/5).Minutes(), "MiB/min_growth_without_retention")
				b.ReportMetric(float64(kept.jobsLeft), "jobs_kept_at_end")
			}
		})
	}
}

// soakStore opens a fresh store for a soak and measures its size.
type soakStore struct {
	name string
	open func(b *testing.B) (store.Store, func() int64)
}

var soakStores = []soakStore{
	{"bolt", func(b *testing.B) (store.Store, func() int64) {
		path := filepath.Join(b.TempDir(), "soak.db")
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s, func() int64 { return fileSize(b, path) }
	}},
	{"postgres", func(b *testing.B) (store.Store, func() int64) {
		s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(b), pgstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s, func() int64 {
			var n int64
			err := s.DB().QueryRow(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
				JOIN pg_namespace ns ON ns.oid = c.relnamespace WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}},
}

// soakFigures is what one soak measured.
type soakFigures struct {
	jobs, jobsLeft     int
	storeStart         int64
	storeWarm, rssWarm int64
	storeEnd, rssEnd   int64
}

// soak runs linear jobs for d while 16 workers run them, with opts: it
// starts up to 200 a second, and no more while 64 are unfinished, so the
// load is one the store sustains and what grows is what is kept, not a
// backlog. It measures the store and RSS after warm and at the end.
func soak(b *testing.B, sb soakStore, d, warm time.Duration, opts Options) soakFigures {
	b.Helper()
	s, size := sb.open(b)
	defer s.Close()
	opts.Owner = "soak"
	opts.Logger = slog.New(slog.DiscardHandler)
	e := New(s, opts)
	inFlight := make(chan struct{}, 64)
	flow := linearFlow()
	flow.Nodes[2].Runner = runtime.Typed(runtime.NodeInfo{ID: "bench.last", Effects: runtime.Pure, Determinism: runtime.Strict},
		func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
			select {
			case <-inFlight: // the job is as good as finished
			default: // a redelivery
			}
			return in, nil
		})
	if err := e.Register(flow); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, benchWorkers) }()
	f := soakFigures{storeStart: size()}
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	warmed := false
	input := json.RawMessage(`{"n":1,"note":"` + strings.Repeat("x", 200) + `"}`)
	for now := range tick.C {
		if now.Sub(start) >= d {
			break
		}
		if !warmed && now.Sub(start) >= warm {
			f.storeWarm, f.rssWarm = size(), rss(b)
			warmed = true
		}
		select {
		case inFlight <- struct{}{}:
		case <-time.After(time.Until(start.Add(d))):
			continue
		}
		if _, err := e.Start(ctx, "linear", input); err != nil {
			b.Fatal(err)
		}
		f.jobs++
	}
	f.storeEnd, f.rssEnd = size(), rss(b)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	err := s.View(context.Background(), func(tx store.ReadTx) error {
		return tx.Scan([]byte("jobs/"), func(_, _ []byte) error { f.jobsLeft++; return nil })
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s soak %s (retention %s): %d jobs, %d kept; store %.1f MiB after %s, %.1f MiB at the end; RSS %.1f MiB, %.1f MiB",
		sb.name, d, opts.Retention, f.jobs, f.jobsLeft, mib(f.storeWarm), warm, mib(f.storeEnd), mib(f.rssWarm), mib(f.rssEnd))
	return f
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func fileSize(b *testing.B, path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return info.Size()
}

// rss is the process's resident set size, from /proc/self/statm.
func rss(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 2 {
		b.Fatalf("/proc/self/statm: %q", raw)
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		b.Fatal(fmt.Errorf("/proc/self/statm: %w", err))
	}
	return pages * int64(os.Getpagesize())
}
