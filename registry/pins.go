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
// write side while it reads the pins, then what versions reference, and
// removes the rest. A pin therefore either happens before the removal
// decides (and is seen) or after it removed the blob (and the store that
// follows the pin writes it again); a pin seen held protects the blob; a
// pin released before the removal read the pins was released after its
// version committed, so the references read next name the blob.

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

// held reports which of digests a pending reference names now. A
// removal asks before it reads the committed references: a pin released
// after that moment was released after its version committed (release
// follows commit), so those references show the blob.
func (p *pins) held(digests ...string) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(digests))
	for _, d := range digests {
		if p.n[d] > 0 {
			out[d] = true
		}
	}
	return out
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
