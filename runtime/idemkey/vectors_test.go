package idemkey

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

func loadVectors(t testing.TB) []Vector {
	t.Helper()
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := ParseVectors(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 3 {
		t.Fatalf("only %d vectors", len(vs))
	}
	return vs
}

func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			in, err := v.Input()
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
