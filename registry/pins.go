package registry

import (
	"context"
	"io"
	"sync"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
)

// Blob ownership. A blob belongs to the versions whose records name it
// (meta.Version.Blobs) and, until they commit, to the uploads and
// certifications about to name it: before storing a blob, they pin its
// digest (a pending reference), and they release the pin only once the
// version that names it is committed, or once they have failed. Garbage
// collection never removes a pinned or committed blob, whatever its age,
// so no committed version can ever name a missing blob.
//
// The gate orders pins against removals, never against client I/O: a pin
// takes its read side for as long as it takes to count the digest, and a
// removal (a collection's batch, a failed upload's discard) holds its
// write side while it reads what is referenced and removes what is not.
// A pin therefore either happens before the removal decides (and is
// seen) or after it removed the blob (and the store that follows the pin
// writes it again); a pin released after its version committed is
// replaced by the committed reference, which a removal reads under the
// gate too.

// pins counts the pending references per digest.
type pins struct {
	gate sync.RWMutex
	mu   sync.Mutex
	n    map[string]int
}

// pin records pending references to digests and returns the function
// that releases them (idempotent). Callers pin before storing and release
// after committing the record that names the blobs, or after failing.
func (p *pins) pin(digests ...string) (release func()) {
	p.gate.RLock()
	p.mu.Lock()
	if p.n == nil {
		p.n = map[string]int{}
	}
	for _, d := range digests {
		p.n[d]++
	}
	p.mu.Unlock()
	p.gate.RUnlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, d := range digests {
				if p.n[d]--; p.n[d] <= 0 {
					delete(p.n, d)
				}
			}
		})
	}
}

// pinned reports whether any pending reference names digest.
func (p *pins) pinned(digest string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[digest] > 0
}

// removal holds pins off while the caller decides what is referenced and
// removes the rest; it returns the function that lets them in again.
func (p *pins) removal() (done func()) {
	p.gate.Lock()
	return p.gate.Unlock
}

// staging is what one upload or certification stores: each blob pinned
// before it is stored, every pin released when the record naming them is
// committed or the work failed, and then, if it failed, the blobs it
// stored removed (Server.discard).
type staging struct {
	s        *Server
	releases []func()
	stored   []string
}

// put pins digest, then stores r under it (blobstore.Store.Put).
func (st *staging) put(ctx context.Context, r io.Reader, digest string, limit int64) (blobstore.Descriptor, error) {
	st.releases = append(st.releases, st.s.pins.pin(digest))
	d, err := st.s.blobs.Put(ctx, r, digest, limit)
	if err == nil {
		st.stored = append(st.stored, d.Digest)
	}
	return d, err
}

// end releases the pins, after the record that names the blobs is
// committed (committed true) or the work failed; a failure's blobs are
// removed unless something else holds them.
func (st *staging) end(committed bool) {
	for _, release := range st.releases {
		release()
	}
	st.releases = nil
	if !committed && len(st.stored) > 0 {
		st.s.discard(st.stored...)
	}
	st.stored = nil
}
