//go:build wasip1

package wasmguest

import (
	"context"
	"net/http"
	"time"
	"unsafe"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// The capability proxies. Each is a zero-size value whose methods call
// its capability's host function; the generated main package names only
// the ones the spec declares, so the module imports only theirs.
type (
	// HTTPRead proxies http.read.
	HTTPRead struct{}
	// HTTPPinned proxies http.read.pinned.
	HTTPPinned struct{}
	// HTTPWrite proxies http.write.
	HTTPWrite struct{}
	// KVRead proxies kv.read.
	KVRead struct{}
	// KVWrite proxies kv.write.
	KVWrite struct{}
	// BlobRead proxies blob.read and blob.read.hash.
	BlobRead struct{}
	// BlobWrite proxies blob.write.
	BlobWrite struct{}
	// Dedupe proxies dedupe.
	Dedupe struct{}
	// Secrets proxies secrets.
	Secrets struct{}
	// Clock proxies clock: the host's wall clock, not the module's.
	Clock struct{}
	// RNG proxies rng and rng.seeded.
	RNG struct{}
)

//go:wasmimport flowgen http_get
func hostHTTPGet(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen http_get_pinned
func hostHTTPGetPinned(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen http_do
func hostHTTPDo(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen kv_get
func hostKVGet(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen kv_put
func hostKVPut(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen blob_read
func hostBlobRead(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen blob_write
func hostBlobWrite(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen dedupe_put
func hostDedupe(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen secret
func hostSecret(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen clock_now
func hostClockNow() int64

//go:wasmimport flowgen rng_u64
func hostRNG() uint64

func httpCall(fn func(unsafe.Pointer, uint32) uint32, q wasmabi.HTTPRequest) (*runtime.HTTPResponse, error) {
	var w wasmabi.Writer
	q.Append(&w)
	r, err := hostCall(fn, w.Bytes())
	if err != nil {
		return nil, err
	}
	s := r.HTTPResponse()
	if err := done(r); err != nil {
		return nil, err
	}
	return &runtime.HTTPResponse{Status: int(s.Status), Header: http.Header(s.Header), Body: s.Body}, nil
}

// Get implements runtime.HTTPReader.
func (HTTPRead) Get(_ context.Context, url string, header http.Header) (*runtime.HTTPResponse, error) {
	return httpCall(hostHTTPGet, wasmabi.HTTPRequest{Method: http.MethodGet, URL: url, Header: header})
}

// GetPinned implements runtime.PinnedHTTPReader.
func (HTTPPinned) GetPinned(_ context.Context, url, pin string, header http.Header) (*runtime.HTTPResponse, error) {
	return httpCall(hostHTTPGetPinned, wasmabi.HTTPRequest{Method: http.MethodGet, URL: url, Header: header, Pin: pin})
}

// Do implements runtime.HTTPWriter.
func (HTTPWrite) Do(_ context.Context, method, url string, header http.Header, body []byte) (*runtime.HTTPResponse, error) {
	return httpCall(hostHTTPDo, wasmabi.HTTPRequest{Method: method, URL: url, Header: header, Body: body})
}

// Get implements runtime.KVReader.
func (KVRead) Get(_ context.Context, key string) ([]byte, bool, error) {
	var w wasmabi.Writer
	w.String(key)
	r, err := hostCall(hostKVGet, w.Bytes())
	if err != nil {
		return nil, false, err
	}
	found, value := r.Bool(), r.ByteString()
	return value, found, done(r)
}

// Put implements runtime.KVWriter.
func (KVWrite) Put(_ context.Context, key string, value []byte) error {
	var w wasmabi.Writer
	w.String(key)
	w.ByteString(value)
	r, err := hostCall(hostKVPut, w.Bytes())
	if err != nil {
		return err
	}
	return done(r)
}

// ReadBlob implements runtime.BlobReader.
func (BlobRead) ReadBlob(_ context.Context, name string) ([]byte, error) {
	var w wasmabi.Writer
	w.String(name)
	r, err := hostCall(hostBlobRead, w.Bytes())
	if err != nil {
		return nil, err
	}
	data := r.ByteString()
	return data, done(r)
}

// WriteBlob implements runtime.BlobWriter.
func (BlobWrite) WriteBlob(_ context.Context, name string, data []byte) error {
	var w wasmabi.Writer
	w.String(name)
	w.ByteString(data)
	r, err := hostCall(hostBlobWrite, w.Bytes())
	if err != nil {
		return err
	}
	return done(r)
}

// PutIfAbsent implements runtime.DedupeStore.
func (Dedupe) PutIfAbsent(_ context.Context, key string, ttl time.Duration) (bool, error) {
	var w wasmabi.Writer
	w.String(key)
	w.Int64(int64(ttl))
	r, err := hostCall(hostDedupe, w.Bytes())
	if err != nil {
		return false, err
	}
	absent := r.Bool()
	return absent, done(r)
}

// Secret implements runtime.Secrets.
func (Secrets) Secret(_ context.Context, handle string) (string, error) {
	var w wasmabi.Writer
	w.String(handle)
	r, err := hostCall(hostSecret, w.Bytes())
	if err != nil {
		return "", err
	}
	value := r.String()
	return value, done(r)
}

// Now implements runtime.Clock.
func (Clock) Now() time.Time { return time.Unix(0, hostClockNow()).UTC() }

// Uint64 implements runtime.RNG.
func (RNG) Uint64() uint64 { return hostRNG() }
