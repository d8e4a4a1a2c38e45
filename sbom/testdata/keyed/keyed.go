// Package keyed stands in for a connector in the SBOM tests: it links a
// module (cbor) that requires another (float16), which the examples'
// connectors, linking only the node API, no longer do.
package keyed

import "github.com/fxamacker/cbor/v2"

// Encode encodes v as CBOR.
func Encode(v any) ([]byte, error) { return cbor.Marshal(v) }
