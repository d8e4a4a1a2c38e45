// Package normalize is the orders.normalize connector: it turns a raw checkout payload into an Order: pure and strict, its output depends on the input bytes alone.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package normalize

//go:generate go tool flowgen gen
