// Package runtime runs flows durably and exactly once on a store (the
// embedded bbolt file by default, PostgreSQL to scale out).
//
// Connector authors meet three things here: the node contract (Runner, and
// the typed adapter Typed that generated code uses), the Context a node
// runs with (its idempotency key, cancellation, heartbeat and the
// capabilities its spec declares), and the error kinds that drive retries.
// Operators meet the Engine: it registers flows, starts jobs, runs workers,
// and kills, pauses, resumes and signals jobs.
//
// The engine lives below this package, in runtime/internal/engine, and sees
// node code only through a small Task seam that Engine adapts each Runner
// to; the vocabulary both share (ids, states, the error taxonomy, NodeInfo,
// flow parts, job reports) is the leaf package runtype, which this package
// re-exports. Inside, the engine has two contours. The router reads the flow
// and decides which node activations follow a finished one (edges, switch
// labels, forEach fan-out and aggregation); it never runs node code. The
// processor runs exactly one activation through its aspects and never
// routes. Every durable step commits with the ledger digit that proves it
// (package ledger), so a crash at any point resumes without losing or
// repeating work.
package runtime
