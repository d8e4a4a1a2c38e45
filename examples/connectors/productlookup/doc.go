// Package productlookup is the catalog.product_lookup connector: it looks a product up in the shop's catalogue API.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package productlookup

//go:generate go tool flowgen gen
