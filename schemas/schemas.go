// Package schemas publishes the JSON Schemas of flowgen's file formats so that
// editors can validate ConnectorSpec and Flow files as authors type. The
// files in this directory are generated from the Go types in connectorspec
// and flowir; TestSchemasInSync fails when they drift (go test ./schemas
// -update rewrites them).
package schemas

import (
	_ "embed"
	"reflect"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/internal/schemagen"
)

// ConnectorSpecJSON is the published schema of ConnectorSpec files.
//
//go:embed connectorspec.schema.json
var ConnectorSpecJSON []byte

// FlowJSON is the published schema of Flow files.
//
//go:embed flowir.schema.json
var FlowJSON []byte

// Published maps each schema file name in this directory to a generator of
// its current contents.
var Published = map[string]func() ([]byte, error){
	"connectorspec.schema.json": func() ([]byte, error) {
		return schemagen.Generate(reflect.TypeFor[connectorspec.Spec](),
			"https://flowgen.dev/schemas/connectorspec.schema.json", "flowgen ConnectorSpec",
			"One connector (node type): identity, effects, capabilities, ports, idempotency, retry and fixtures.")
	},
	"flowir.schema.json": func() ([]byte, error) {
		return schemagen.Generate(reflect.TypeFor[flowir.Flow](),
			"https://flowgen.dev/schemas/flowir.schema.json", "flowgen Flow IR",
			"A flow: nodes (connector calls and control surfaces) joined by typed edges.")
	},
}
