package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// fileSink is an external system in another process's reach: each effect
// creates a file named by its idempotency key, once (O_EXCL), as an API
// that honours idempotency keys would apply it once.
type fileSink string

func (d fileSink) apply(key, payload string) error {
	if key == "" {
		return runtime.Errorf(runtime.Permanent, "effect without idempotency key")
	}
	f, err := os.OpenFile(filepath.Join(string(d), key), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(payload)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// killFlow is orderFlow with a file sink and a slow charge, so that kills
// land mid-step.
func killFlow(dir string) *runtime.Flow {
	f := orderFlow(nil)
	for _, n := range f.Nodes {
		if n.Alias == "charge" {
			n.Runner = runtime.Typed(runtime.NodeInfo{ID: "payments.charge", Effects: runtime.Effectful, KeySchema: "payments.charge@1", KeyFields: []string{"order_id", "total"}},
				func(ctx *runtime.Context, _ noParams, in order) (charged, error) {
					time.Sleep(2 * time.Millisecond)
					return charged{in.OrderID, in.Total}, fileSink(dir).apply(ctx.IdempotencyKey(), fmt.Sprint(in.Total))
				})
		}
	}
	return f
}

// TestHelperWorker is not a test: the kill -9 test runs the test binary with
// FLOWGEN_KILL9_STORE set to make it a worker process.
func TestHelperWorker(t *testing.T) {
	t.Parallel()
	path := os.Getenv("FLOWGEN_KILL9_STORE")
	if path == "" {
		t.Skip("helper process for TestKill9Worker")
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e := New(s, Options{Owner: fmt.Sprintf("pid-%d", os.Getpid()), Visibility: 300 * time.Millisecond, LeaseTTL: 300 * time.Millisecond})
	if err := e.Register(killFlow(os.Getenv("FLOWGEN_KILL9_SINK"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // exit once every job is finished
		for {
			time.Sleep(20 * time.Millisecond)
			if n, err := unfinished(s); err == nil && n == 0 {
				cancel()
				return
			}
		}
	}()
	if err := e.Run(ctx, 4); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	s.Close()
	os.Exit(0)
}

// unfinished counts messages still pending on the work stream.
func unfinished(s store.Store) (int, error) {
	var n int
	err := s.View(context.Background(), func(tx store.ReadTx) error {
		p, err := tx.Pending(WorkStream)
		n = len(p)
		return err
	})
	return n, err
}

// TestKill9Worker runs jobs in a worker process, kill -9s it several times
// mid-run, and lets a last worker finish: every job must succeed with its
// effect applied exactly once.
func TestKill9Worker(t *testing.T) {
	if os.Getenv("FLOWGEN_KILL9_STORE") != "" {
		t.Skip("inside the helper")
	}
	dir := t.TempDir()
	path, sinkDir := filepath.Join(dir, "store.db"), filepath.Join(dir, "sink")
	if err := os.Mkdir(sinkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := New(s, Options{})
	if err := e.Register(killFlow(sinkDir)); err != nil {
		t.Fatal(err)
	}
	const jobs = 30
	ids := make([]runtime.JobID, jobs)
	for i := range ids {
		in := fmt.Sprintf(`{"order_id":"o-%d","method":"card","lines":[{"sku":"a","qty":%d},{"sku":"b","qty":1}]}`, i, i+1)
		if ids[i], err = e.Start(context.Background(), "orders", json.RawMessage(in)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	worker := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorker$")
		cmd.Env = append(os.Environ(), "FLOWGEN_KILL9_STORE="+path, "FLOWGEN_KILL9_SINK="+sinkDir)
		cmd.Stderr = os.Stderr
		return cmd
	}
	kills := 0
	for i := range 6 {
		cmd := worker()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(80+40*i) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil {
			break // it finished everything before the kill
		}
		kills++
	}
	if err := worker().Run(); err != nil {
		t.Fatalf("final worker: %v", err)
	}
	t.Logf("killed the worker %d times", kills)

	s, err = boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e = New(s, Options{})
	for i, id := range ids {
		st, err := e.Status(context.Background(), id)
		if err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("job %d: %+v %v", i, st, err)
		}
	}
	effects, err := os.ReadDir(sinkDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != jobs {
		t.Fatalf("%d effects for %d jobs", len(effects), jobs)
	}
	if n, err := unfinished(s); err != nil || n != 0 {
		t.Fatalf("%d messages left (%v)", n, err)
	}
}
