package idemkey

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// TestFieldOrderDoesNotMatter writes the same fields in every order of a
// small set, through JSON, and expects one key.
func TestFieldOrderDoesNotMatter(t *testing.T) {
	orders := []string{
		`{"a":1,"bb":"x","c":{"y":true,"x":null}}`,
		`{"c":{"x":null,"y":true},"a":1,"bb":"x"}`,
		`{"bb":"x","c":{"y":true,"x":null},"a":1.0}`,
	}
	var first Key
	for i, doc := range orders {
		fields, err := ParseFields([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		k, err := Compute(Input{Schema: "s@1", Node: "n", Fields: fields})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = k
		} else if k != first {
			t.Errorf("%s gives %s, want %s", doc, k, first)
		}
	}
}

// TestGoValuesMatchJSON checks that Go-typed fields (as generated code
// passes them) give the same key as the JSON spelling of the same values.
func TestGoValuesMatchJSON(t *testing.T) {
	fromJSON, err := ParseFields([]byte(`{"n":42,"f":2.5,"neg":-7,"s":"x","l":[1,"two"],"m":{"k":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	goFields := map[string]any{
		"n": 42, "f": 2.5, "neg": int64(-7), "s": "x",
		"l": []any{uint32(1), "two"}, "m": map[string]any{"k": false},
	}
	a, err := Compute(Input{Schema: "s", Node: "n", Fields: fromJSON})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compute(Input{Schema: "s", Node: "n", Fields: goFields})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("JSON key %s != Go key %s", a, b)
	}
}

// TestPartitionNilVersusEmpty keeps "no partition" (CBOR null) distinct from
// an empty partition (empty byte string).
func TestPartitionNilVersusEmpty(t *testing.T) {
	none, err := Compute(Input{Schema: "s", Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := Compute(Input{Schema: "s", Node: "n", Partition: []byte{}})
	if err != nil {
		t.Fatal(err)
	}
	if none == empty {
		t.Error("nil and empty partitions give the same key")
	}
}

func TestRejectsValuesWithoutCanonicalForm(t *testing.T) {
	for name, v := range map[string]any{
		"NaN":         math.NaN(),
		"+Inf":        math.Inf(1),
		"nested -Inf": []any{map[string]any{"x": math.Inf(-1)}},
		"Go struct":   struct{}{},
		"channel":     make(chan int),
		"json big":    json.Number("1e999"),
		"json int":    json.Number("-18446744073709551617"),
	} {
		_, err := Compute(Input{Schema: "s", Node: "n", Fields: map[string]any{"v": v}})
		if !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%s: error = %v, want ErrInvalidValue", name, err)
		}
	}
}

func TestRejectsDeepNesting(t *testing.T) {
	var v any = "leaf"
	for range maxDepth + 2 {
		v = []any{v}
	}
	if _, err := Compute(Input{Fields: map[string]any{"v": v}}); !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("error = %v, want ErrInvalidValue", err)
	}
}

// FuzzEncode checks that no input panics or hangs, and that every accepted
// input encodes deterministically and to the same key however it is
// re-serialised.
func FuzzEncode(f *testing.F) {
	for _, v := range loadVectors(f) {
		f.Add([]byte(v.Fields))
	}
	f.Add([]byte(`{"a":[[[[1]]]],"b":-0.0,"c":1e-320}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fields, err := ParseFields(data)
		if err != nil {
			return
		}
		in := Input{Schema: "s", Node: "n", Fields: fields}
		k1, err := Compute(in)
		if err != nil {
			return
		}
		// Round-trip through encoding/json (which sorts keys and respells
		// numbers); the key must not change.
		re, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseFields(re)
		if err != nil {
			t.Fatalf("re-parse %s: %v", re, err)
		}
		k2, err := Compute(Input{Schema: "s", Node: "n", Fields: again})
		if err != nil {
			t.Fatalf("re-encode %s: %v", re, err)
		}
		if k1 != k2 {
			t.Fatalf("key changed after round trip: %s -> %s", data, re)
		}
	})
}
