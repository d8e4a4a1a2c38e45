package pgstore_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		url := pgtest.FreshSchema(t)
		return storetest.Backend{Open: func(now func() time.Time) (store.Store, error) {
			return pgstore.Open(context.Background(), url, pgstore.Options{Now: now})
		}}
	})
}

// TestMigrationsAreConcurrentSafeAndReversible runs "up" from several
// goroutines at once (the advisory lock serialises them), then down and up
// again.
func TestMigrationsAreConcurrentSafeAndReversible(t *testing.T) {
	t.Parallel()
	url := pgtest.FreshSchema(t) // already migrated once
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	all, err := pgstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	newest := all[len(all)-1].Version
	v, err := pgstore.MigrateDown(ctx, db)
	if err != nil || v != newest {
		t.Fatalf("down: %d %v, want %d", v, err, newest)
	}
	if _, err := pgstore.Open(ctx, url, pgstore.Options{}); err == nil {
		t.Fatal("opened a store on an unmigrated schema")
	}
	var wg sync.WaitGroup
	applied := make(chan []int, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vs, err := pgstore.MigrateUp(ctx, db)
			if err != nil {
				t.Error(err)
			}
			applied <- vs
		}()
	}
	wg.Wait()
	close(applied)
	total := 0
	for vs := range applied {
		total += len(vs)
	}
	if total != 1 {
		t.Fatalf("migration %d applied %d times by concurrent runners", newest, total)
	}
	ms, have, err := pgstore.MigrationStatus(ctx, db)
	if err != nil || len(ms) == 0 || !have[ms[len(ms)-1].Version] {
		t.Fatalf("status: %v %v %v", ms, have, err)
	}
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
