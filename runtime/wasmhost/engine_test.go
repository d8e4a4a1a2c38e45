//go:build !race

package wasmhost_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/wasmbuild"
	_ "github.com/lib/pq" // the reader's database
)

// TestEngineRunsConfinedNodes: a flow whose node is a confined connector
// runs to the end on both stores, its one write reaching the provider
// once with its idempotency key; an engine refuses the flow when the
// module is not the certified one.
func TestEngineRunsConfinedNodes(t *testing.T) {
	t.Parallel()
	spec, diags := connectorspec.Load("testdata/confined/writer/connector.yaml")
	if spec == nil {
		t.Fatal(diags.Err())
	}
	decl, err := gen.Declare(spec)
	if err != nil {
		t.Fatal(err)
	}
	wasm := mustBuild(t, "testdata/confined/writer", decl.NodeInfo())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "writer.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	confined := runtime.Confined{Declaration: decl, Digest: wasmbuild.Digest(wasm), Path: "writer.wasm"}

	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	grants := engine.Grants{Transport: &engine.ConnectTo{Routes: []engine.ConnectRoute{{Host: "api.example.com", Target: target}}}}

	flow := func(c runtime.Confined) *runtime.Flow {
		b := runtime.NewBuilder("notes")
		runtime.AddNode(b, "post", runtime.ConfinedNode(c), runtime.NodeOptions{Timeout: 30 * time.Second})
		f, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	stores := map[string]func() store.Store{
		"bolt": func() store.Store {
			s, err := boltstore.Open(filepath.Join(t.TempDir(), "flowgen.db"), boltstore.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"postgres": func() store.Store {
			s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(t), pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		s := open()
		defer s.Close()
		e := engine.New(s, engine.Options{Owner: name, ModuleDir: dir, ModuleCache: sharedCache(t), Capabilities: grants.For})
		if err := e.Register(flow(confined)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		job, err := e.Start(ctx, "notes", json.RawMessage(`{"id":"n-`+name+`","note":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		go e.Run(ctx, 2)
		st, err := e.Wait(ctx, job)
		cancel()
		if err != nil || st.State != runtime.StateSucceeded || !strings.Contains(string(st.Result["post"]), `"status":201`) {
			t.Errorf("%s: job ended %+v %v", name, st, err)
		}
	}
	mu.Lock()
	if len(keys) != 2 || keys[0] == "" || keys[0] == keys[1] {
		t.Errorf("the provider saw keys %q, want one per job", keys)
	}
	mu.Unlock()

	tampered := confined
	tampered.Digest = "sha256:" + strings.Repeat("0", 64)
	e := engine.New(stores["bolt"](), engine.Options{ModuleDir: dir, ModuleCache: sharedCache(t)})
	if err := e.Register(flow(tampered)); err == nil || !strings.Contains(err.Error(), "these are not the certified bytes") {
		t.Errorf("a module other than the certified one: %v", err)
	}
}

// TestConfinedReadsCannotWrite: the queries of a confined connector that
// declares only db.read run in a read-only transaction, so that no
// phrasing of a write (a data-modifying CTE, a second statement) changes
// the database; reads work.
func TestConfinedReadsCannotWrite(t *testing.T) {
	t.Parallel()
	spec, diags := connectorspec.Load("testdata/confined/reader/connector.yaml")
	if spec == nil {
		t.Fatal(diags.Err())
	}
	decl, err := gen.Declare(spec)
	if err != nil {
		t.Fatal(err)
	}
	wasm := mustBuild(t, "testdata/confined/reader", decl.NodeInfo())
	dsn := pgtest.FreshSchema(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (id text PRIMARY KEY); INSERT INTO notes VALUES ('a'), ('b'); CREATE SEQUENCE notes_seq`); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "reader.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	b := runtime.NewBuilder("reads")
	runtime.AddNode(b, "read", runtime.ConfinedNode(runtime.Confined{Declaration: decl, Digest: wasmbuild.Digest(wasm), Path: "reader.wasm"}), runtime.NodeOptions{Timeout: 30 * time.Second})
	flow, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	grants := engine.Grants{DB: db}
	e := engine.New(st, engine.Options{Owner: "reads", ModuleDir: dir, ModuleCache: sharedCache(t), Capabilities: grants.For})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go e.Run(ctx, 2)
	run := func(query string) runtime.JobStatus {
		in, _ := json.Marshal(map[string]string{"query": query})
		job, err := e.Start(ctx, "reads", in)
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.Wait(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := run(`SELECT id FROM notes`); st.State != runtime.StateSucceeded || !strings.Contains(string(st.Result["read"]), `"rows":2`) {
		t.Errorf("a read: %+v", st)
	}
	for _, write := range []string{
		`WITH gone AS (DELETE FROM notes RETURNING id) SELECT id FROM gone`,
		`INSERT INTO notes VALUES ('c') RETURNING id`,
		`SELECT nextval('notes_seq')`,
	} {
		if st := run(write); st.State != runtime.StateFailed || !strings.Contains(strings.Join(st.Errors, "\n"), "read-only transaction") {
			t.Errorf("%s: %+v, want it failed in a read-only transaction", write, st)
		}
	}
	// Statements that would end the read-only transaction and go on
	// outside it.
	for _, escape := range []string{
		`SELECT 1; DELETE FROM notes`,
		`COMMIT; DELETE FROM notes WHERE id = 'a'`,
		`ROLLBACK; INSERT INTO notes VALUES ('rolled')`,
		`SET TRANSACTION READ WRITE; INSERT INTO notes VALUES ('rw'); COMMIT`,
		`END; CREATE TABLE pwned (x int)`,
	} {
		if st := run(escape); st.State != runtime.StateFailed {
			t.Errorf("%s: %+v, want it refused", escape, st)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n); err != nil || n != 2 {
		t.Errorf("notes has %d rows (%v), want the 2 it started with", n, err)
	}
	var pwned bool
	if err := db.QueryRow(`SELECT to_regclass('pwned') IS NOT NULL`).Scan(&pwned); err != nil || pwned {
		t.Errorf("a read-only connector created a table (%v)", err)
	}
	// Rows without columns still count against what a module may receive.
	if st := run(`SELECT FROM generate_series(1, 30000000)`); st.State != runtime.StateFailed || !strings.Contains(strings.Join(st.Errors, "\n"), "exceed") {
		t.Errorf("thirty million rows of no columns: %+v, want them refused past the limit", st)
	}
}
