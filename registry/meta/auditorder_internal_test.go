package meta

import (
	"context"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestPostgresAuditCommitsInSequenceOrder: while a transaction that
// appended an event is open, another append waits for it, so no reader
// sees a later sequence number before an earlier one commits (the
// webhook sender's cursor would pass it for good).
func TestPostgresAuditCommitsInSequenceOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := OpenPostgres(ctx, pgtest.FreshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	if err := insertAudit(ctx, tx, Event{Time: t0, Actor: "a", Action: "first"}); err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() { appended <- p.AppendAudit(ctx, Event{Time: t0, Actor: "b", Action: "second"}) }()
	select {
	case err := <-appended:
		t.Fatalf("an append committed (%v) while an earlier one was still open", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	events, err := p.AuditAfter(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Action != "first" || events[1].Action != "second" || events[0].Seq >= events[1].Seq {
		t.Fatalf("events %+v, want first then second in sequence order", events)
	}
}
