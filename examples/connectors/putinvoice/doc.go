// Package putinvoice is the storage.put_invoice connector: it renders an order's invoice and stores it as a blob.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package putinvoice

//go:generate go tool flowgen gen
