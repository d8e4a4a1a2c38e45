// Command river is the baseline for flowgen's PostgreSQL benchmark: River
// (github.com/riverqueue/river), a well-regarded Go + PostgreSQL job queue,
// working no-op jobs on the same database. It lives in its own module so
// River stays out of flowgen's dependencies.
//
// Usage: go run . -database-url URL -jobs N -workers W
// It prints one line: "river jobs=N workers=W seconds=S jobs/s=R".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done *atomic.Int64
}

func (w *noopWorker) Work(ctx context.Context, job *river.Job[noopArgs]) error {
	w.done.Add(1)
	return nil
}

func main() {
	url := flag.String("database-url", os.Getenv("FLOWGEN_TEST_DATABASE_URL"), "PostgreSQL URL")
	jobs := flag.Int("jobs", 3000, "no-op jobs to work")
	workers := flag.Int("workers", 4, "River MaxWorkers")
	flag.Parse()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, *url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		log.Fatal(err)
	}
	var done atomic.Int64
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{done: &done})
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		Workers:           ws,
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            nil,
	})
	if err != nil {
		log.Fatal(err)
	}
	// One transaction per job insert, as flowgen starts one job per commit.
	start := time.Now()
	for range *jobs {
		if _, err := client.Insert(ctx, noopArgs{}, nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	for done.Load() < int64(*jobs) {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client.Stop(stopCtx)
	fmt.Printf("river jobs=%d workers=%d seconds=%.3f jobs/s=%.1f\n", *jobs, *workers, elapsed.Seconds(), float64(*jobs)/elapsed.Seconds())
}
