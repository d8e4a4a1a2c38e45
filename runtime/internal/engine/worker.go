package engine

import (
	"log/slog"
	"sync/atomic"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// worker carries deliveries from reserved to committed: it claims them
// (batch.go), runs each activation through the processor, and commits its
// steps through the protocol writer by one of its committers (Inline,
// Folded, Chained, RanAhead, TakenOn), picked by what the store can do.
// It is the only part of the engine that asks the store for its
// capabilities.
type worker struct {
	writes  *protocolWriter
	store   store.Store
	opts    *Options
	log     *slog.Logger
	caps    store.Capabilities
	proc    *processor
	metrics metrics
	tracing *tracing
	hook    *crashHook

	// local is the Run that takes on the jobs this engine starts, if one
	// does (local.go).
	local atomic.Pointer[localRun]
	// committed counts the deliveries each committer committed.
	committed committerTally
}
