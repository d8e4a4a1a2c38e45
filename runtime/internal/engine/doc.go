// Package engine runs flows durably and exactly once on a store. It is the
// machinery below package runtime: users meet it through runtime.Engine,
// which adapts each node's Runner into a Task, the one seam through which
// the engine calls node code.
//
// The engine has two contours. The router (router.go) reads the compiled
// flow and decides which activations follow a finished one: edges, switch
// labels, forEach fan-out and joins; it never runs node code. The
// processor (processor.go) runs exactly one activation through its aspects
// (boundary input, dedupe, the call with its timeout and key, retries,
// lease renewal) and never routes. The step protocol (step.go) carries a
// result from one to the other and commits each durable step together
// with the ledger digit that proves it (package ledger), so a crash at any
// point (CrashPoints) resumes without losing or repeating work. keys.go
// draws the store layout every other file writes.
package engine
