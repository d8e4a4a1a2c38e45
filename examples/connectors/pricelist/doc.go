// Package pricelist is the catalog.price_list connector: it reads a price list pinned by its ETag, so a replay reads the same prices or fails.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package pricelist

//go:generate go tool flowgen gen
