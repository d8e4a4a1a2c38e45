// Package idemkey computes canonical idempotency keys.
//
// A key is the BLAKE3-256 digest of a CBOR map with exactly four text keys:
//
//	schema     text: the key schema name (usually connector id@major)
//	node       text: the node (alias or connector id) the key belongs to
//	partition  byte string, or null when the key scope has no partition
//	fields     map: the key fields, by name
//
// encoded with RFC 8949 §4.2.1 core deterministic encoding: definite lengths,
// integers and floats in their shortest form, map keys sorted by the bytewise
// order of their encodings (so shorter keys first). Every text string, map
// keys included, is NFC-normalised first. Values follow the JSON data model:
// integers become CBOR integers, true/false/null CBOR simple values, arrays
// keep their order, objects follow the same rules recursively.
//
// Numbers: a JSON number written without fraction or exponent is an integer
// and must fit CBOR's integer range [-2^64, 2^64-1]. Any other number is
// parsed as an IEEE 754 double; if that double is integral and within ±2^53 it
// is encoded as the integer (so 1.0, 1e3 and 1000 give the same key),
// otherwise as the shortest float (half, single or double) that holds it
// exactly. NaN and infinities are rejected. Two object keys that become equal
// after NFC normalisation are rejected, and so are duplicate keys in JSON
// input.
//
// Keys never depend on Go map order or on the order fields were written in.
// testdata/vectors.json holds vectors other implementations can check
// against; `flowgen idemkey` prints keys from the command line.
package idemkey

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"golang.org/x/text/unicode/norm"
	"lukechampine.com/blake3"
)

// Input is what a key is computed from.
type Input struct {
	Schema string
	Node   string
	// Partition is nil when the key's scope has no partition.
	Partition []byte
	// Fields holds JSON-model values: nil, bool, string, json.Number, Go
	// integers and floats, []any and map[string]any.
	Fields map[string]any
}

// Key is a 32-byte canonical idempotency key.
type Key [32]byte

// String returns the key as lowercase hex.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// ErrInvalidValue is wrapped by every error about a value that has no
// canonical encoding (NaN, infinities, out-of-range integers, colliding keys,
// unsupported Go types).
var ErrInvalidValue = errors.New("value has no canonical encoding")

var encMode = func() cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	opts.ShortestFloat = cbor.ShortestFloat16
	opts.BigIntConvert = cbor.BigIntConvertShortest
	opts.NaNConvert = cbor.NaNConvertReject
	opts.InfConvert = cbor.InfConvertReject
	em, err := opts.EncMode()
	if err != nil {
		panic(err) // fixed options; cannot fail
	}
	return em
}()

// Encode returns the canonical CBOR bytes of in.
func Encode(in Input) ([]byte, error) {
	fields, err := canonical(in.Fields, "fields", 0)
	if err != nil {
		return nil, err
	}
	var partition any // CBOR null unless a partition is given
	if in.Partition != nil {
		partition = in.Partition
	}
	doc := map[string]any{
		"schema":    norm.NFC.String(in.Schema),
		"node":      norm.NFC.String(in.Node),
		"partition": partition,
		"fields":    fields,
	}
	return encMode.Marshal(doc)
}

// Compute returns the key of in.
func Compute(in Input) (Key, error) {
	b, err := Encode(in)
	if err != nil {
		return Key{}, err
	}
	return blake3.Sum256(b), nil
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 256

var (
	minCBORInt = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 64))                // -2^64
	maxCBORInt = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(1)) // 2^64-1
)

const maxExactInt = 1 << 53

// canonical converts a JSON-model value to the Go value whose CBOR encoding
// is canonical.
func canonical(v any, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d: %w", path, maxDepth, ErrInvalidValue)
	}
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		return norm.NFC.String(x), nil
	case json.Number:
		return number(string(x), path)
	case int:
		return int64(x), nil
	case int64, int32, uint32, uint64:
		return x, nil
	case float64:
		return float(x, path)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := canonical(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			nk := norm.NFC.String(k)
			if _, dup := out[nk]; dup {
				return nil, fmt.Errorf("%s: keys %q collide after NFC normalisation: %w", path, k, ErrInvalidValue)
			}
			c, err := canonical(e, path+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			out[nk] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: unsupported type %T: %w", path, v, ErrInvalidValue)
}

// number applies the number rules to a JSON number literal.
func number(lit, path string) (any, error) {
	if !strings.ContainsAny(lit, ".eE") {
		if len(lit) > 21 { // longer than any in-range integer; avoid big parses
			return nil, fmt.Errorf("%s: integer %s out of range: %w", path, lit, ErrInvalidValue)
		}
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok {
			return nil, fmt.Errorf("%s: invalid number %q: %w", path, lit, ErrInvalidValue)
		}
		if n.Cmp(minCBORInt) < 0 || n.Cmp(maxCBORInt) > 0 {
			return nil, fmt.Errorf("%s: integer %s out of range: %w", path, lit, ErrInvalidValue)
		}
		return n, nil
	}
	f, err := json.Number(lit).Float64()
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%s: number %s out of range: %w", path, lit, ErrInvalidValue)
	}
	return float(f, path)
}

// float encodes integral doubles within ±2^53 as integers, others as floats.
func float(f float64, path string) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%s: %v is not a JSON number: %w", path, f, ErrInvalidValue)
	}
	if f == math.Trunc(f) && math.Abs(f) <= maxExactInt {
		return int64(f), nil
	}
	return f, nil
}
