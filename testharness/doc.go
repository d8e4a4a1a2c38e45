// Package testharness is what connector authors test with, in the spirit of
// net/http/httptest and rivertest: a fake clock and seeded randomness, HTTP
// cassettes that record real exchanges once and replay them so tests never
// touch the network, a recorder that captures a node's whole run (inputs,
// every capability call and its result, output) and replays it, a
// duplicate-delivery harness (bursts, delayed and time-skewed duplicates,
// reordering) that names every idempotency key with more than one effect,
// and a crash-point harness that runs a flow through every crash point of
// the runtime's step protocol.
//
// Failures are reported through testing.TB and say what differed, never
// just that something did.
package testharness
