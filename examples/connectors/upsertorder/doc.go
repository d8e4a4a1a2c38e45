// Package upsertorder is the warehouse.upsert_order connector: it records a paid order in the warehouse database, idempotently.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package upsertorder

//go:generate go tool flowgen gen
