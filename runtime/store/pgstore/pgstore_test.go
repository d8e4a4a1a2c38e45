package pgstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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

// TestClaimReadsWhatItClaims: beside 20,000 acknowledged messages and
// 20,000 expired leases of finished jobs, a claim of 16 ready messages
// reads about 10 buffers a message, not the tables (the query before
// migration 5 read 685 here: it scanned both whole), and claims them all.
func TestClaimReadsWhatItClaims(t *testing.T) {
	t.Parallel()
	url := pgtest.FreshSchema(t)
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	for _, q := range []string{
		`INSERT INTO flowgen_messages (stream, id, job, payload, visible_at, holder, open_at, done)
			SELECT 'work', decode(md5('done' || i), 'hex'), decode(md5('job' || i / 3), 'hex'), NULL, 0, '', 0, true
			FROM generate_series(1, 20000) i`,
		`INSERT INTO flowgen_leases SELECT decode(md5('job' || i), 'hex'), 'gone', 1, 5 FROM generate_series(1, 20000) i`,
		`INSERT INTO flowgen_messages (stream, id, job, payload, visible_at, holder, open_at)
			SELECT 'work', decode(md5('ready' || i), 'hex'), decode(md5('new' || i), 'hex'), '\x00', 0, '', 0
			FROM generate_series(1, 16) i`,
		`ANALYZE flowgen_messages, flowgen_leases`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// The second claim of the session, whose plan is made: what every
	// claim but a session's first costs.
	var plan []byte
	for range 2 {
		err = tx.QueryRow(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM flowgen_reserve('work', 10, 'w', 16)`).Scan(&plan)
		if err != nil {
			t.Fatal(err)
		}
	}
	var nodes []struct {
		Plan struct {
			Rows int `json:"Actual Rows"`
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &nodes); err != nil || len(nodes) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	p := nodes[0].Plan
	if p.Rows != 16 {
		t.Errorf("claimed %d messages, want the 16 ready ones", p.Rows)
	}
	if buffers := p.Hit + p.Read; buffers > 300 {
		t.Errorf("the claim read %d buffers beside a history of 40,000 rows, want under 300", buffers)
	}
}

// TestReclaimLetsDeletedRowsBeReused: rows deleted and then Reclaimed
// leave their space to the next rows: writing as much again does not
// grow the table (with the server's autovacuum off, as on the test
// machines, nothing else would reclaim it). VACUUM removes only rows no
// open transaction can still see, and other tests share the database: it
// reclaims again until the table has no dead rows left, as the sweeper
// does every 30 seconds.
func TestReclaimLetsDeletedRowsBeReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgtest.FreshSchema(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	size := func() int64 {
		var n int64
		if err := s.DB().QueryRowContext(ctx, `SELECT pg_relation_size('flowgen_kv')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	write := func() {
		err := s.Update(ctx, func(tx store.Tx) error {
			for i := range 2000 {
				if err := tx.Put([]byte(fmt.Sprintf("r/%04d", i)), make([]byte, 1000)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write()
	full := size()
	err = s.Update(ctx, func(tx store.Tx) error {
		_, err := tx.DeletePrefix([]byte("r/"), 5000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		if err := s.Reclaim(ctx); err != nil {
			t.Fatal(err)
		}
		var dead int64
		if err := s.DB().QueryRowContext(ctx, `SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'flowgen_kv'::regclass`).Scan(&dead); err != nil {
			t.Fatal(err)
		}
		if dead == 0 {
			break
		}
		if attempt == 100 {
			t.Fatalf("%d dead rows left after %d reclaims over 20 s: a transaction stays open that long", dead, attempt+1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	write()
	if again := size(); again > full+full/10 {
		t.Fatalf("the table grew from %d to %d bytes writing as much again after a reclaim", full, again)
	}
}

// TestSettledPublicationIsOneRow: a message published reserved and settled
// in the same transaction is written once, already done (migration 0007),
// and its row is the row the publication and a later settle leave: done,
// no payload, attempt and token 1, acknowledged at the store's clock.
func TestSettledPublicationIsOneRow(t *testing.T) {
	t.Parallel()
	url := pgtest.FreshSchema(t)
	clock := time.Unix(1_700_000_000, 0)
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	publish := func(tx store.Tx, n byte) (store.Message, error) {
		return tx.EnqueueReserved(store.Message{ID: [16]byte{n}, Stream: "s", Job: []byte("j"), Payload: []byte("p")}, "w", time.Minute)
	}
	err = s.Update(ctx, func(tx store.Tx) error { // in one transaction
		m, err := publish(tx, 1)
		if err != nil {
			return err
		}
		return tx.Settle(m.Receipt)
	})
	if err != nil {
		t.Fatal(err)
	}
	var later store.Message // in two
	if err := s.Update(ctx, func(tx store.Tx) (err error) { later, err = publish(tx, 2); return err }); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.Settle(later.Receipt) }); err != nil {
		t.Fatal(err)
	}
	read := func(n byte) string {
		var payload []byte
		var visible, open, attempt, token int64
		var holder, reason string
		var done bool
		id := [16]byte{n}
		err := s.DB().QueryRow(`SELECT payload, visible_at, open_at, attempt, token, holder, reason, done
			FROM flowgen_messages WHERE stream = 's' AND id = $1`, id[:]).
			Scan(&payload, &visible, &open, &attempt, &token, &holder, &reason, &done)
		if err != nil {
			t.Fatalf("message %d: %v", n, err)
		}
		return fmt.Sprintf("payload %q (nil %t) acknowledged at %d open at %d attempt %d token %d holder %q reason %q done %t",
			payload, payload == nil, visible, open, attempt, token, holder, reason, done)
	}
	one, two := read(1), read(2)
	want := fmt.Sprintf(`payload "" (nil true) acknowledged at %d open at %d attempt 1 token 1 holder "w" reason "" done true`,
		clock.UnixNano(), clock.Add(time.Minute).UnixNano())
	if one != want || two != want {
		t.Errorf("settled in its publishing transaction: %s\nsettled after it:                   %s\nwant:                              %s", one, two, want)
	}
}
