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
			{Alias: "charge", Runner: charge},
		},
		Edges: []runtime.Edge{
			{From: "each", FromPort: "out", To: "total"},
			{From: "total", FromPort: "out", To: "charge"},
		},
	}
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
	e := runtime.New(s, runtime.Options{Owner: fmt.Sprintf("pid-%d", os.Getpid()), Visibility: time.Second, LeaseTTL: time.Second})
	if err := e.Register(flow(os.Getenv("FLOWGEN_CHAOS_SINK"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e.Run(ctx, 4) // until killed
}

// TestChaos runs 1,000 jobs on 3 worker processes sharing PostgreSQL while
// a controller kill -9s a random worker every few hundred milliseconds and
// restarts it, and restarts PostgreSQL once mid-run. Every job must
// complete, each effect exactly once, nothing stuck or unacknowledged.
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
	e := runtime.New(s, runtime.Options{})
	if err := e.Register(flow(sinkDir)); err != nil {
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
		cmd.Env = append(os.Environ(), "FLOWGEN_CHAOS_STORE="+url, "FLOWGEN_CHAOS_SINK="+sinkDir)
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
		p, err := tx.Pending(runtime.WorkStream)
		if err == nil && len(p) != 0 {
			return fmt.Errorf("%d messages left unacknowledged", len(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// finished counts jobs whose status is final.
func finished(db *sql.DB) (int, error) {
	var n int
	err := db.QueryRow(`SELECT count(*) FROM flowgen_kv WHERE encode(k, 'escape') LIKE 'pid/%/status'
		AND encode(v, 'escape') NOT LIKE '%"running"%'`).Scan(&n)
	return n, err
}
