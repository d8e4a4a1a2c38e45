package idemkey

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Vector is one entry of a test-vector file such as testdata/vectors.json:
// the inputs of a key, and either the expected CBOR and digest or a fragment
// of the error the input must be rejected with.
type Vector struct {
	Name   string `json:"name"`
	Schema string `json:"schema"`
	Node   string `json:"node"`
	// PartitionHex is nil when the key has no partition.
	PartitionHex *string `json:"partition_hex"`
	// Fields is kept as written: duplicate keys, number spelling and Unicode
	// form all matter.
	Fields  json.RawMessage `json:"fields"`
	CBORHex string          `json:"cbor_hex,omitempty"`
	Key     string          `json:"key,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// ParseVectors decodes a vector file: {"description": ..., "vectors": [...]}.
func ParseVectors(data []byte) ([]Vector, error) {
	var file struct{ Vectors []Vector }
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("vector file: %w", err)
	}
	return file.Vectors, nil
}

// Input builds the Input the vector describes; the error is the one parsing
// its fields or partition produced.
func (v Vector) Input() (Input, error) {
	in := Input{Schema: v.Schema, Node: v.Node}
	if v.PartitionHex != nil {
		p, err := hex.DecodeString(*v.PartitionHex)
		if err != nil {
			return in, fmt.Errorf("partition_hex: %w", err)
		}
		in.Partition = append([]byte{}, p...) // non-nil even when empty
	}
	fields, err := ParseFields(v.Fields)
	in.Fields = fields
	return in, err
}
