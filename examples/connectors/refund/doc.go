// Package refund is the payments.refund connector: it refunds a captured charge; it is the compensation of payments.charge.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package refund

//go:generate go tool flowgen gen
