//go:build chaos

package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

const (
	jobs    = 1000
	workers = 3
)

// flow: each -> price (per line) -> total -> charge (effect into sinkDir,
// keyed by order id and total).
func flow(sinkDir string) *runtime.Flow {
	type line struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	type none struct{}
	price := runtime.Typed(runtime.NodeInfo{ID: "chaos.price"}, func(ctx *runtime.Context, _ none, in line) (map[string]int, error) {
		return map[string]int{"cents": 100 * in.Qty}, nil
	})
	total := runtime.Typed(runtime.NodeInfo{ID: "chaos.total"}, func(ctx *runtime.Context, _ none, in []map[string]int) (map[string]int, error) {
		sum := 0
		for _, p := range in {
			sum += p["cents"]
		}
		return map[string]int{"total": sum}, nil
	})
	charge := runtime.Typed(runtime.NodeInfo{ID: "chaos.charge", Effects: runtime.Effectful, KeySchema: "chaos.charge@1", KeyFields: []string{"total"}},
		func(ctx *runtime.Context, _ none, in map[string]int) (map[string]int, error) {
			f, err := os.OpenFile(filepath.Join(sinkDir, ctx.IdempotencyKey()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err == nil {
				f.WriteString(fmt.Sprint(in["total"]))
				err = f.Close()
			} else if errors.Is(err, os.ErrExist) {
				err = nil // the sink honours the key: a repeat is not a second effect
			}
			return in, err
		})
	return &runtime.Flow{
		Name: "chaos",
		Nodes: []*runtime.FlowNode{
			{Alias: "each", ForEach: &runtime.ForEach{Items: "lines", Do: "price"}},
			{Alias: "price", Runner: price},
			{Alias: "total", Runner: total},
			{Alias: "nap", Sleep: &runtime.Sleep{For: 200 * time.Millisecond}},
			{Alias: "charge", Runner: charge},
		},
		Edges: []runtime.Edge{
			{From: "each", FromPort: "out", To: "total"},
			{From: "total", FromPort: "out", To: "nap"},
			{From: "nap", FromPort: "out", To: "charge"},
		},
	}
}

// tickFlow is what the chaos schedule starts every second.
func tickFlow() *runtime.Flow {
	echo := runtime.Typed(runtime.NodeInfo{ID: "chaos.tick"}, func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	return &runtime.Flow{Name: "tick", Nodes: []*runtime.FlowNode{{Alias: "tick", Runner: echo}}}
}

// tick is the schedule every worker process has.
var tick = runtime.Schedule{Name: "chaos", Flow: "tick", Cron: "@every 1s", Input: json.RawMessage(`{}`), Overlap: runtime.OverlapAllow}

// register gives e the chaos flows, and the schedule when withSchedule.
func register(e *engine.Engine, sinkDir string, withSchedule bool) error {
	for _, f := range []*runtime.Flow{flow(sinkDir), tickFlow()} {
		if err := e.Register(f); err != nil {
			return err
		}
	}
	if withSchedule {
		return e.AddSchedule(tick)
	}
	return nil
}

// TestChaosWorker is the worker process the chaos test starts and kills.
func TestChaosWorker(t *testing.T) {
	url := os.Getenv("FLOWGEN_CHAOS_STORE")
	if url == "" {
		t.Skip("worker process of TestChaos")
	}
	ctx := context.Background()
	var s *pgstore.Store
	var err error
	for range 50 { // the server may be restarting
		if s, err = pgstore.Open(ctx, url, pgstore.Options{}); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e := engine.New(s, engine.Options{Owner: fmt.Sprintf("pid-%d", os.Getpid()), Visibility: time.Second, LeaseTTL: time.Second})
	if err := register(e, os.Getenv("FLOWGEN_CHAOS_SINK"), os.Getenv("FLOWGEN_CHAOS_SCHEDULE") != ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e.Run(ctx, 4) // until killed
}

// TestChaos runs 1,000 jobs on 3 worker processes sharing PostgreSQL while
// a controller kill -9s a random worker every few hundred milliseconds and
// restarts it, and restarts PostgreSQL once mid-run. Every job sleeps on a
// durable timer before its effect, and every worker has a schedule that
// starts a job each second. Every job must complete, each effect exactly
// once, each schedule tick one job, nothing stuck or unacknowledged.
func TestChaos(t *testing.T) {
	if os.Getenv("FLOWGEN_CHAOS_STORE") != "" {
		t.Skip("inside a worker")
	}
	url := pgtest.FreshSchema(t)
	sinkDir := t.TempDir()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(s, engine.Options{})
	if err := register(e, sinkDir, false); err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.JobID, jobs)
	for i := range ids {
		in := fmt.Sprintf(`{"order_id":"o-%d","lines":[{"sku":"a","qty":%d},{"sku":"b","qty":1},{"sku":"c","qty":2}]}`, i, i)
		if ids[i], err = e.Start(ctx, "chaos", json.RawMessage(in)); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	procs := make([]*exec.Cmd, workers)
	start := func(i int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChaosWorker$", "-test.timeout=0")
		cmd.Env = append(os.Environ(), "FLOWGEN_CHAOS_STORE="+url, "FLOWGEN_CHAOS_SINK="+sinkDir, "FLOWGEN_CHAOS_SCHEDULE=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = cmd
	}
	for i := range procs {
		start(i)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	}()

	db := s.DB()
	deadline := time.Now().Add(5 * time.Minute)
	kills, restarted := 0, false
	for {
		done, err := finished(db)
		if err == nil && done == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stopped after 5 minutes with %d of %d jobs finished (%d kills)", done, jobs, kills)
		}
		if !restarted && done > jobs/3 {
			restarted = true
			pgtest.Cluster(t, "restart")
		}
		time.Sleep(time.Duration(200+rand.IntN(200)) * time.Millisecond)
		i := rand.IntN(workers)
		mu.Lock()
		procs[i].Process.Kill() // SIGKILL
		procs[i].Wait()
		start(i)
		mu.Unlock()
		kills++
	}
	t.Logf("%d jobs finished through %d kill -9s and a PostgreSQL restart", jobs, kills)
	if !restarted {
		t.Error("PostgreSQL was never restarted: the run was too fast to test it")
	}
	// The schedule stops with its workers; a worker without it finishes
	// the tick jobs they started.
	mu.Lock()
	for _, p := range procs {
		p.Process.Kill()
		p.Wait()
	}
	mu.Unlock()
	drained, stop := context.WithCancel(ctx)
	go e.Run(drained, 4)
	defer stop()
	checkTicks(t, e)

	for i, id := range ids {
		st, err := e.Status(ctx, id)
		if err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("job %d: %+v %v", i, st, err)
		}
	}
	effects, err := os.ReadDir(sinkDir)
	if err != nil {
		t.Fatal(err)
	}
	// Totals are 100*i + 300 for i in [0, jobs): distinct, so one effect per job.
	if len(effects) != jobs {
		t.Fatalf("%d effects for %d jobs", len(effects), jobs)
	}
	err = s.View(ctx, func(tx store.ReadTx) error {
		p, err := tx.Pending(engine.WorkStream)
		if err == nil && len(p) != 0 {
			return fmt.Errorf("%d messages left unacknowledged", len(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkTicks waits for the schedule's jobs to finish and checks that no
// tick started two: each job's key (the tick) is its own.
func checkTicks(t *testing.T, e *engine.Engine) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		running, err := e.Jobs(ctx, runtime.JobQuery{Flow: "tick", State: string(runtime.StateRunning), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(running.Jobs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tick job %s still running", running.Jobs[0].Job)
		}
		time.Sleep(100 * time.Millisecond)
	}
	keys := map[string]string{}
	q := runtime.JobQuery{Flow: "tick", Limit: 1000}
	for {
		list, err := e.Jobs(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range list.Jobs {
			id, _ := runtime.ParseJobID(j.Job)
			in, err := e.Inspect(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct{ Key string }
			for _, en := range in.Entries {
				if en.Key == "meta" {
					json.Unmarshal(en.Value, &meta)
				}
			}
			if other, dup := keys[meta.Key]; dup || meta.Key == "" {
				t.Fatalf("tick %q started jobs %s and %s", meta.Key, other, j.Job)
			}
			keys[meta.Key] = j.Job
			if j.State != runtime.StateSucceeded {
				t.Errorf("tick job %s: %s", j.Job, j.State)
			}
		}
		if list.Next == "" {
			break
		}
		q.After = list.Next
	}
	if len(keys) < 3 {
		t.Errorf("the schedule started %d jobs in a run of several seconds", len(keys))
	}
	t.Logf("%d scheduled jobs, one per tick", len(keys))
}

// finished counts the chaos flow's jobs whose status is final (the
// schedule's jobs are not counted).
func finished(db *sql.DB) (int, error) {
	var n int
	err := db.QueryRow(`SELECT count(*) FROM flowgen_kv st WHERE encode(st.k, 'escape') LIKE 'pid/%/status'
		AND encode(st.v, 'escape') NOT LIKE '%"running"%'
		AND EXISTS (SELECT 1 FROM flowgen_kv m WHERE m.k = substring(st.k FROM 1 FOR length(st.k) - 6) || 'meta'::bytea
			AND encode(m.v, 'escape') LIKE '%"flow":"chaos"%')`).Scan(&n)
	return n, err
}
