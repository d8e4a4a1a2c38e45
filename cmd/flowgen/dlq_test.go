package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// TestDLQCommands: a job whose flow no worker had for 15 minutes is
// dead-lettered;
// flowgen dlq lists and shows it, fails it (twice, idempotently), refuses
// to requeue it after that, and the job then fails as the docs say.
func TestDLQCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	// A clock that starts 20 minutes ago, so that the grace period for a
	// flow no worker serves has passed by now.
	var late atomic.Bool
	then := time.Now().Add(-20 * time.Minute)
	clock := func() time.Time {
		if late.Load() {
			return then.Add(16 * time.Minute)
		}
		return then
	}
	s, err := boltstore.Open(path, boltstore.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	echo := runtime.Typed(runtime.NodeInfo{ID: "t.echo"}, func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	one := &runtime.Flow{Name: "one", Nodes: []*runtime.FlowNode{{Alias: "echo", Runner: echo}}}
	withFlow, without := engine.New(s, engine.Options{Now: clock}), engine.New(s, engine.Options{Now: clock})
	if err := withFlow.Register(one); err != nil {
		t.Fatal(err)
	}
	job, err := withFlow.Start(ctx, "one", json.RawMessage(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a worker deployed without the flow leaves it, then gives up
		if _, err := without.Step(ctx); err != nil {
			t.Fatal(err)
		}
		late.Store(true)
	}
	s.Close()

	if r := run(t, "", "dlq", "--store", path, "list"); r.exit != exitOK || strings.Count(r.stdout, "\n") != 2 ||
		!strings.Contains(r.stdout, job.String()) || !strings.Contains(r.stdout, "echo@") || !strings.Contains(r.stdout, `"one"`) {
		t.Fatalf("dlq list: %+v", r)
	}
	var dead []runtime.DeadLetter
	r := run(t, "", "dlq", "--store", path, "--json", "list")
	if err := json.Unmarshal([]byte(r.stdout), &dead); err != nil || len(dead) != 1 {
		t.Fatalf("dlq list --json: %v %+v", err, r)
	}
	id := dead[0].ID.String()
	if r := run(t, "", "dlq", "show", "--store", path, id); r.exit != exitOK || !strings.Contains(r.stdout, `input:       {"x":1}`) ||
		!strings.Contains(r.stdout, "(flow one, node echo)") {
		t.Fatalf("dlq show: %+v", r)
	}
	for range 2 {
		r := run(t, "", "dlq", "fail", "--store", path, "--reason", "flow retired", id)
		if r.exit != exitOK || !strings.HasPrefix(r.stdout, id+": failed as message ") || !strings.Contains(r.stderr, "no flowgen serve") {
			t.Fatalf("dlq fail: %+v", r)
		}
	}
	if r := run(t, "", "dlq", "requeue", "--store", path, id); r.exit != exitProblems || !strings.Contains(r.stderr, "already taken") {
		t.Errorf("requeue of a failed dead letter: %+v", r)
	}
	if r := run(t, "", "dlq", "show", "--store", path, id); r.exit != exitProblems {
		t.Errorf("show of a dead letter no more: %+v", r)
	}
	for _, args := range [][]string{{}, {"list", id}, {"show"}, {"requeue"}, {"purge", id}, {"show", "not-an-id"}} {
		if r := run(t, "", append([]string{"dlq", "--store", path}, args...)...); r.exit != exitUsage {
			t.Errorf("dlq %v: %+v", args, r)
		}
	}

	s, err = boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := engine.New(s, engine.Options{})
	if err := e.Register(one); err != nil {
		t.Fatal(err)
	}
	stepAll(t, e)
	if st, err := e.Status(ctx, job); err != nil || st.State != runtime.StateFailed || !strings.Contains(strings.Join(st.Errors, " "), "DeadLettered: flow retired") {
		t.Errorf("job after dlq fail: %+v %v", st, err)
	}
}
