package connectorspec

// The files of a connector directory: the spec, and what flowgen generate
// writes next to it. Every package that looks for a connector or its
// generated code uses these names.
const (
	// FileName is the spec of a connector; a directory that holds one is a
	// connector.
	FileName = "connector.yaml"
	// TypesFile holds the Go types of the connector's schemas.
	TypesFile = "types_gen.go"
	// NodeFile holds the typed node, its manifest and its idempotency key.
	NodeFile = "node_gen.go"
	// FixturesFile holds the tests of the spec's fixtures; it exists only
	// when the spec has fixtures.
	FixturesFile = "fixtures_gen_test.go"
)
