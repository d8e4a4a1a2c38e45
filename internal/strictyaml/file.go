package strictyaml

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// MaxFileSize bounds the source files flowgen reads (specs, flows, schemas):
// far above any real spec, far below what would exhaust memory.
const MaxFileSize = 16 << 20

// ReadFile reads a source file, refusing anything that is not a regular file
// (devices, FIFOs, directories) and anything larger than MaxFileSize, so that
// a hostile path in a $ref or subflow cannot hang or exhaust the process.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed", path, st.Size(), MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s grew past the %d bytes allowed while being read", path, MaxFileSize)
	}
	return data, nil
}

// CanonicalJSON renders a decoded spec or flow in its canonical JSON form:
// fields in declaration order, map keys sorted, two-space indentation, no
// HTML escaping, a final newline. The output is deterministic byte for byte
// and decodes back to the same value.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SortedJSON renders any JSON-marshalable value with every object's keys
// sorted (struct fields included), in CanonicalJSON's layout: the form in
// which reports and manifests are stored and signed.
func SortedJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	return CanonicalJSON(generic)
}
