package wasmabi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Writer builds a message. The zero value is ready to use.
type Writer struct{ buf []byte }

// Bytes returns the message written so far.
func (w *Writer) Bytes() []byte { return w.buf }

// Reset empties w, keeping its buffer.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// Uint8 appends v.
func (w *Writer) Uint8(v uint8) { w.buf = append(w.buf, v) }

// Bool appends v as one byte.
func (w *Writer) Bool(v bool) {
	if v {
		w.Uint8(1)
	} else {
		w.Uint8(0)
	}
}

// Uint32 appends v.
func (w *Writer) Uint32(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf, v) }

// Uint64 appends v.
func (w *Writer) Uint64(v uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, v) }

// Int64 appends v.
func (w *Writer) Int64(v int64) { w.Uint64(uint64(v)) }

// Float64 appends v.
func (w *Writer) Float64(v float64) { w.Uint64(math.Float64bits(v)) }

// ByteString appends p with its length.
func (w *Writer) ByteString(p []byte) {
	w.Uint32(uint32(len(p)))
	w.buf = append(w.buf, p...)
}

// String appends s with its length.
func (w *Writer) String(s string) {
	w.Uint32(uint32(len(s)))
	w.buf = append(w.buf, s...)
}

// Header appends a header map in sorted key order, so that equal headers
// are equal bytes.
func (w *Writer) Header(h map[string][]string) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.Uint32(uint32(len(keys)))
	for _, k := range keys {
		w.String(k)
		w.Uint32(uint32(len(h[k])))
		for _, v := range h[k] {
			w.String(v)
		}
	}
}

// errShort is the error of a Reader that ran out of input.
var errShort = errors.New("wasmabi: message ends early")

// Reader reads a message. After the first error every read returns a zero
// value and Err reports that error.
type Reader struct {
	buf []byte
	err error
}

// NewReader reads p.
func NewReader(p []byte) *Reader { return &Reader{buf: p} }

// Err is the first error a read met, or nil.
func (r *Reader) Err() error { return r.err }

// Done returns Err, or an error when input is left over.
func (r *Reader) Done() error {
	if r.err == nil && len(r.buf) > 0 {
		r.err = fmt.Errorf("wasmabi: %d bytes left over after the message", len(r.buf))
	}
	return r.err
}

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf) {
		r.err = errShort
		r.buf = nil
		return nil
	}
	p := r.buf[:n:n]
	r.buf = r.buf[n:]
	return p
}

// Uint8 reads a byte.
func (r *Reader) Uint8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

// Bool reads a byte that must be 0 or 1.
func (r *Reader) Bool() bool {
	switch v := r.Uint8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		if r.err == nil {
			r.err = fmt.Errorf("wasmabi: %d is not a boolean", v)
		}
		return false
	}
}

// Uint32 reads a uint32.
func (r *Reader) Uint32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// Uint64 reads a uint64.
func (r *Reader) Uint64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// Int64 reads an int64.
func (r *Reader) Int64() int64 { return int64(r.Uint64()) }

// Float64 reads a float64.
func (r *Reader) Float64() float64 { return math.Float64frombits(r.Uint64()) }

// ByteString reads a length-prefixed byte string. The result aliases the
// input; nil for an empty one.
func (r *Reader) ByteString() []byte {
	n := r.Uint32()
	if n == 0 {
		return nil
	}
	return r.take(int(n))
}

// String reads a length-prefixed string.
func (r *Reader) String() string { return string(r.ByteString()) }

// Header reads a header map. A map's size is bounded by the input: every
// entry takes at least eight bytes.
func (r *Reader) Header() map[string][]string {
	n := r.Uint32()
	if r.err != nil || n == 0 {
		return nil
	}
	if int(n) > len(r.buf)/8 {
		r.err = errShort
		return nil
	}
	h := make(map[string][]string, n)
	for range n {
		k := r.String()
		m := r.Uint32()
		if int(m) > len(r.buf)/4 {
			r.err = errShort
			return nil
		}
		vs := make([]string, 0, m)
		for range m {
			vs = append(vs, r.String())
		}
		h[k] = vs
	}
	if r.err != nil {
		return nil
	}
	return h
}
