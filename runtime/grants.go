package runtime

import (
	"database/sql"
	"net/http"
	"slices"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Grants builds an activation's capabilities from what its node declares:
// a capability the node does not name stays nil. Set it as
// Options.Capabilities (grants.For).
type Grants struct {
	// Store backs KV and dedupe.
	Store store.Store
	// Blobs backs blob read and write (s3blobs for S3-compatible storage);
	// when nil, BlobDir does.
	Blobs interface {
		BlobReader
		BlobWriter
	}
	// BlobDir backs blob read and write on local disk.
	BlobDir string
	// Transport carries HTTP; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Secrets resolves handles; EnvSecrets when nil.
	Secrets Secrets
	// DB backs db.read and db.write.
	DB *sql.DB
	// Seed seeds rng.seeded per activation (mixed with nothing else, so a
	// replay with the same seed draws the same numbers).
	Seed uint64
}

// For returns the capabilities of a node.
func (g Grants) For(info NodeInfo) Capabilities {
	has := func(c flowtype.Capability) bool { return slices.Contains(info.Capabilities, string(c)) }
	var caps Capabilities
	if has(flowtype.HTTPRead) || has(flowtype.HTTPReadPinned) || has(flowtype.HTTPWrite) {
		h := NewHTTP(g.Transport, info.Egress)
		if has(flowtype.HTTPRead) {
			caps.HTTPRead = h
		}
		if has(flowtype.HTTPReadPinned) {
			caps.HTTPPinned = h
		}
		if has(flowtype.HTTPWrite) {
			caps.HTTPWrite = h
		}
	}
	if g.Store != nil {
		kv := NewStoreKV(g.Store, info.ID)
		if has(flowtype.KVRead) {
			caps.KVRead = kv
		}
		if has(flowtype.KVWrite) {
			caps.KVWrite = kv
		}
		if has(flowtype.Dedupe) {
			caps.Dedupe = NewStoreDedupe(g.Store, nil)
		}
	}
	var blobs interface {
		BlobReader
		BlobWriter
	}
	switch {
	case g.Blobs != nil:
		blobs = g.Blobs
	case g.BlobDir != "":
		blobs = &DiskBlobs{dir: g.BlobDir}
	}
	if b := blobs; b != nil {
		if has(flowtype.BlobRead) || has(flowtype.BlobReadHash) {
			caps.BlobRead = b
		}
		if has(flowtype.BlobWrite) {
			caps.BlobWrite = b
		}
	}
	if g.DB != nil {
		if has(flowtype.DBRead) || has(flowtype.DBWrite) {
			caps.DBRead = g.DB
		}
		if has(flowtype.DBWrite) {
			caps.DBWrite = g.DB
		}
	}
	if has(flowtype.Clock) {
		caps.Clock = SystemClock{}
	}
	if has(flowtype.RNG) {
		caps.RNG = SystemRNG{}
	}
	if has(flowtype.RNGSeeded) {
		caps.RNG = NewSeededRNG(g.Seed)
	}
	if has(flowtype.Secrets) {
		caps.Secrets = g.Secrets
		if caps.Secrets == nil {
			caps.Secrets = EnvSecrets{}
		}
	}
	return caps
}
