package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// TestStoreSweepAndCompact: flowgen store sweep deletes the finished jobs
// past their retention and keeps the running one; compact then shrinks
// the file, which still holds the running job, and refuses a store a
// process has open.
func TestStoreSweepAndCompact(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, eng := echoStore(t, path, engine.Options{Retention: time.Millisecond})
	ctx := context.Background()
	const jobs = 300
	pad := strings.Repeat("p", 4<<10)
	for i := range jobs {
		if _, err := eng.Start(ctx, "one", json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))); err != nil {
			t.Fatal(err)
		}
	}
	stepAll(t, eng)
	running, err := eng.Start(ctx, "one", json.RawMessage(`{"x":2}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	time.Sleep(2 * time.Millisecond) // past the jobs' retention

	r := run(t, "", "store", "sweep", "--store", path)
	if r.exit != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("swept %s: %d jobs, 0 expired records, 0 blobs, 0 acknowledged message ids\n", path, jobs)) {
		t.Fatalf("store sweep: %+v", r)
	}
	r = run(t, "", "store", "sweep", "--json", "--store", path)
	if r.exit != exitOK || !strings.Contains(r.stdout, `"jobs": 0`) {
		t.Fatalf("store sweep again: %+v", r)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "store", "compact", "--store", path)
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.exit != exitOK || !strings.HasPrefix(r.stdout, "compacted "+path+": ") || after.Size() >= before.Size()/4 {
		t.Fatalf("store compact: %+v; %d bytes before, %d after", r, before.Size(), after.Size())
	}
	if r := run(t, "", "inspect", "--store", path, running.String()); r.exit != exitOK || !strings.Contains(r.stdout, ": running\n") {
		t.Fatalf("the running job after compaction: %+v", r)
	}

	held, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	r = run(t, "", "store", "compact", "--store", path)
	if r.exit != exitUsage || !strings.Contains(r.stderr, "in use by another process") || !strings.Contains(r.stderr, "stop the flowgen serve or worker") {
		t.Fatalf("compact of a store in use: %+v", r)
	}
	for _, args := range [][]string{{"store"}, {"store", "polish"}, {"store", "compact", "--store", "postgres://localhost/x"}} {
		if r := run(t, "", args...); r.exit != exitUsage {
			t.Errorf("%v: %+v", args, r)
		}
	}
}
