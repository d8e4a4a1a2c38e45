package idemkey

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// vector is one entry of testdata/vectors.json. Fields stays raw so that the
// bytes as written (duplicate keys, number spelling, Unicode form) reach
// ParseFields.
type vector struct {
	Name         string          `json:"name"`
	Schema       string          `json:"schema"`
	Node         string          `json:"node"`
	PartitionHex *string         `json:"partition_hex"`
	Fields       json.RawMessage `json:"fields"`
	CBORHex      string          `json:"cbor_hex"`
	Key          string          `json:"key"`
	Error        string          `json:"error"`
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Vectors []vector }
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) < 3 {
		t.Fatalf("only %d vectors", len(file.Vectors))
	}
	return file.Vectors
}

// input builds the Input a vector describes, or the error it must produce.
func (v vector) input() (Input, error) {
	in := Input{Schema: v.Schema, Node: v.Node}
	if v.PartitionHex != nil {
		p, err := hex.DecodeString(*v.PartitionHex)
		if err != nil {
			return in, err
		}
		in.Partition = append([]byte{}, p...) // non-nil even when empty
	}
	fields, err := ParseFields(v.Fields)
	in.Fields = fields
	return in, err
}

func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			in, err := v.input()
			var enc []byte
			if err == nil {
				enc, err = Encode(in)
			}
			if v.Error != "" {
				if err == nil || !strings.Contains(err.Error(), v.Error) {
					t.Fatalf("error = %v, want one containing %q", err, v.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(enc); got != v.CBORHex {
				t.Errorf("cbor\n got %s\nwant %s", got, v.CBORHex)
			}
			key, err := Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			if key.String() != v.Key {
				t.Errorf("key\n got %s\nwant %s", key, v.Key)
			}
		})
	}
}
