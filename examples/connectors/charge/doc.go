// Package charge is the payments.charge connector: it captures a card payment for an order through the provider's charges API, passing the node's idempotency key so a repeated call never charges twice.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package charge

//go:generate go tool flowgen gen
