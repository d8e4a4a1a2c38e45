// Package engine runs flows durably and exactly once on a store. It is the
// machinery below package runtime: users meet it through runtime.Engine,
// which adapts each node's Runner into a Task, the one seam through which
// the engine calls node code.
//
// Engine's methods are the runtime's API; the work is done by parts that
// do not call back into it:
//
//   - the catalog (versions.go) holds the registered flow definitions;
//   - the router (router.go) reads a compiled flow and decides which
//     activations follow a finished one: edges, switch labels, forEach
//     fan-out and joins; it never runs node code;
//   - the processor (processor.go) runs exactly one activation through its
//     aspects (boundary input, dedupe, the call with its timeout and key,
//     retries) and returns its result; it never routes and writes nothing:
//     it reads through a view, and what an attempt holds while it runs
//     (the job's lease, a rate limit's token) the protocol writer takes;
//   - the protocol writer (writer.go) makes every durable write of the
//     step protocol, each step together with the ledger digit that proves
//     it (package ledger), so a crash at any point (CrashPoints) resumes
//     without losing or repeating work; package protocol draws the store
//     layout it writes;
//   - the worker (worker.go) carries deliveries from reserved to committed
//     by one of its committers (committers.go), the only part that asks
//     the store what it can do.
package engine
