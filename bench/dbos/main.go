// Command dbos is a baseline for flowgen's PostgreSQL benchmark: DBOS
// Transact for Go (github.com/dbos-inc/dbos-transact-golang), durable
// workflows checkpointed in PostgreSQL, on the same database. It lives in
// its own module so DBOS stays out of flowgen's dependencies.
//
// It runs, in one process, the shapes flowgen's benchmark runs:
//
//   - linear: a workflow of three no-op steps, started by 8 goroutines one
//     after another, directly (RunWorkflow) and through a durable queue
//     polled every 20 ms;
//   - fanout: a workflow that starts 100 child workflows of one step each,
//     waits for their results and runs one step after them;
//   - latency: one linear workflow at a time.
//
// Usage: go run . -database-url URL [-workflows N]
// It prints one line per shape:
//
//	dbos linear-direct workflows=N steps=S seconds=T steps/s=R pg-cpu-ms/step=C
//	dbos linear-queue workflows=N steps=S seconds=T steps/s=R pg-cpu-ms/step=C
//	dbos fanout workflows=N steps=S seconds=T steps/s=R pg-cpu-ms/step=C
//
// pg-cpu-ms/step is the CPU time PostgreSQL spent per step (internal/pgcpu).
//
//	dbos latency workflows=N p50-ms=X p99-ms=Y
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/flowgen-dev/flowgen/internal/pgcpu"
)

const goroutines = 8

func noop(context.Context) (int, error) { return 1, nil }

// linear is three durable no-op steps.
func linear(ctx dbos.Context, n int) (int, error) {
	for range 3 {
		if _, err := dbos.RunAsStep(ctx, noop); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// element is one fan-out child: one durable step.
func element(ctx dbos.Context, n int) (int, error) {
	return dbos.RunAsStep(ctx, noop)
}

// fanout starts 100 children, collects their results and runs one step.
func fanout(ctx dbos.Context, n int) (int, error) {
	handles := make([]dbos.WorkflowHandle[int], 100)
	for i := range handles {
		h, err := dbos.RunWorkflow(ctx, element, i)
		if err != nil {
			return 0, err
		}
		handles[i] = h
	}
	sum := 0
	for _, h := range handles {
		v, err := h.GetResult()
		if err != nil {
			return 0, err
		}
		sum += v
	}
	if _, err := dbos.RunAsStep(ctx, noop); err != nil {
		return 0, err
	}
	return sum, nil
}

// serverCPU is PostgreSQL's CPU time so far; the benchmark runs on the
// server's machine.
func serverCPU() time.Duration {
	d, err := pgcpu.Used()
	if err != nil {
		log.Fatal(err)
	}
	return d
}

func main() {
	url := flag.String("database-url", os.Getenv("FLOWGEN_TEST_DATABASE_URL"), "PostgreSQL URL")
	schema := flag.String("schema", "flowgen_dbos_bench", "schema DBOS keeps its tables in")
	workflows := flag.Int("workflows", 1000, "linear workflows per shape (fan-out runs a fiftieth)")
	flag.Parse()
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{
		DatabaseURL:    *url,
		DatabaseSchema: *schema,
		AppName:        "flowgen-bench",
	})
	if err != nil {
		log.Fatal(err)
	}
	dbos.RegisterWorkflow(ctx, linear)
	dbos.RegisterWorkflow(ctx, element)
	dbos.RegisterWorkflow(ctx, fanout)
	queue, err := dbos.RegisterQueue(ctx, "bench", dbos.WithQueueBasePollingInterval(20*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	if err := dbos.Launch(ctx); err != nil {
		log.Fatal(err)
	}
	defer dbos.Shutdown(ctx, 5*time.Second)

	// report prints a shape's figures; PostgreSQL's CPU per step counts
	// from the previous report (or from here).
	cpu := serverCPU()
	report := func(shape string, n, steps int, elapsed time.Duration) {
		now := serverCPU()
		fmt.Printf("dbos %s workflows=%d steps=%d seconds=%.2f steps/s=%.1f pg-cpu-ms/step=%.3f\n", shape, n, steps,
			elapsed.Seconds(), float64(steps)/elapsed.Seconds(), float64((now-cpu).Microseconds())/1000/float64(steps))
		cpu = now
	}
	report("linear-direct", *workflows, 3**workflows, concurrently(*workflows, func(i int) error {
		return await(dbos.RunWorkflow(ctx, linear, i))
	}))
	// Through the queue: every workflow enqueued first, then all awaited,
	// so the figure is the queue's throughput, not a handle's polling.
	handles := make([]dbos.WorkflowHandle[int], *workflows)
	start := time.Now()
	concurrently(*workflows, func(i int) (err error) {
		handles[i], err = dbos.RunWorkflow(ctx, linear, i, dbos.WithQueue(queue))
		return err
	})
	for _, h := range handles {
		if _, err := h.GetResult(dbos.WithHandlePollingInterval(5 * time.Millisecond)); err != nil {
			log.Fatal(err)
		}
	}
	report("linear-queue", *workflows, 3**workflows, time.Since(start))
	fans := max(*workflows/50, 1)
	cpu = serverCPU() // not the queue's idle polling before the fan-out
	report("fanout", fans, 101*fans, concurrently(fans, func(i int) error {
		return await(dbos.RunWorkflow(ctx, fanout, i))
	}))
	lat := make([]time.Duration, 0, *workflows/5)
	for i := range cap(lat) {
		start := time.Now()
		if err := await(dbos.RunWorkflow(ctx, linear, i)); err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	fmt.Printf("dbos latency workflows=%d p50-ms=%.2f p99-ms=%.2f\n", len(lat), ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]))
}

// concurrently runs fn for 0..n-1 on goroutines workers and returns the
// elapsed time; any error ends the program.
func concurrently(n int, fn func(i int) error) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for w := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += goroutines {
				if err := fn(i); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func await(h dbos.WorkflowHandle[int], err error) error {
	if err != nil {
		return err
	}
	_, err = h.GetResult()
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
