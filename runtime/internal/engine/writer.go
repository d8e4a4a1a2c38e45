package engine

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// protocolWriter makes every durable write of the step protocol, each in
// a transaction its caller opened: a job's start, a delivery's entry
// (enter, judge), its steps (commitResult: the result, the children, the
// ledger digits and, when it closes the job, the job's end), the parking
// of a checkpoint, a sleep or a subflow, the job's control records and
// its history. It decides nothing about how deliveries reach it (the
// worker does) and runs no node code.
type protocolWriter struct {
	store   store.Store
	opts    *Options
	log     *slog.Logger
	flows   *catalog
	hook    *crashHook
	metrics metrics
	tracing *tracing
	router  router
	// afterFunc runs a function once a duration has passed on the
	// engine's clock (afterOn).
	afterFunc func(time.Duration, func()) (cancel func())

	// held is the last lease taken per job (string(job) -> store.Lease)
	// of the jobs not finished yet, released when Run stops so other
	// workers need not wait out the TTL.
	held sync.Map
	// unservedLogged holds the flow keys this process said it lacks.
	unservedLogged sync.Map

	// formatRead says the store's format was read and is one this
	// release reads (protocol.ReadFormat), and formatRecorded that the
	// store carries it; until a start has committed it, every start
	// records it. formatMu makes concurrent first starts share one read.
	formatRead, formatRecorded atomic.Bool
	formatMu                   sync.Mutex
}

// reserve reserves up to max ready messages of the work stream for this
// worker (store.ErrEmpty: none is ready).
func (pw *protocolWriter) reserve(tx store.Tx, max int) ([]store.Message, error) {
	return tx.Reserve(store.Claim{Stream: runtype.WorkStream, Owner: pw.opts.Owner, Visibility: pw.opts.Visibility, Max: max})
}

// deadLetter moves m, which cannot be taken on (why), to the dead-letter
// stream.
func (pw *protocolWriter) deadLetter(tx store.Tx, m store.Message, why error) error {
	return ignoreStale(tx.DeadLetter(m.Receipt, why.Error()))
}

// now is the engine's clock.
func (pw *protocolWriter) now() time.Time { return pw.opts.Now() }
