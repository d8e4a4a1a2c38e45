package engine

import "sync/atomic"

// Committer names a way a delivery goes from reserved to its steps
// committed. Each is crash-enumerated on the backend it runs on: the
// crash tests ask CommittersUsed which ones their enumeration went
// through, so a path no crash test visits fails a test.
type Committer uint8

// The committers.
const (
	// Inline: a delivery claimed from the stream, run, and committed
	// alone (step).
	Inline Committer = iota
	// Folded: a Pure node's delivery run inside its claim's transaction
	// and committed with it, under a savepoint when careful (fold.go;
	// stores with LocksRows and Savepoints).
	Folded
	// Chained: a delivery its predecessor's commit published reserved to
	// this worker, entered without a claim (chain.go).
	Chained
	// RanAhead: a Pure step run before its entry, on its predecessor's
	// result, and committed in its predecessor's commit (ahead.go; stores
	// with one writer).
	RanAhead
	// TakenOn: an entry activation a start published reserved to its own
	// engine's Run, entered in the start's transaction (local.go).
	TakenOn
	numCommitters
)

var committerNames = [numCommitters]string{"inline", "folded", "chained", "ran-ahead", "taken-on"}

// String names c.
func (c Committer) String() string { return committerNames[c] }

// committerTally counts the deliveries each committer committed.
type committerTally [numCommitters]atomic.Int64

// CommittersUsed returns how many deliveries each committer of e
// committed since e was made, by name; committers never used are absent.
func CommittersUsed(e *Engine) map[string]int64 {
	used := map[string]int64{}
	for c := range numCommitters {
		if n := e.worker.committed[c].Load(); n > 0 {
			used[c.String()] = n
		}
	}
	return used
}
