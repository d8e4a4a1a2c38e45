package registry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// DefaultGCGrace is how long an unreferenced blob is kept: what a killed
// process left half-way (a failed upload removes its own bytes at once).
const DefaultGCGrace = 24 * time.Hour

// gcBatch is how many blobs a collection removes per turn of the gate, so
// that an upload waits to pin for at most one batch.
const gcBatch = 64

// GCOptions steer a collection.
type GCOptions struct {
	// Grace is the age below which an unreferenced blob is kept (default
	// DefaultGCGrace).
	Grace time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// CollectGarbage removes blobs that no version refers to, that no upload
// or certification has pinned (pins.go), and that are older than the
// grace period (with DryRun, only reports them).
func (s *Server) CollectGarbage(ctx context.Context, opts GCOptions) (api.GCReport, error) {
	if opts.Grace <= 0 {
		opts.Grace = s.cfg.GCGrace
	}
	rep, err := collect(ctx, s.meta, s.blobs, s.now(), opts, &s.pins)
	if err == nil && !opts.DryRun && len(rep.Removed) > 0 {
		s.log.Info("garbage collected", slog.Int("blobs", len(rep.Removed)), slog.Int64("bytes", rep.RemovedBytes))
	}
	return rep, err
}

// CollectGarbage is garbage collection on the stores themselves, for
// registryd gc when no server runs (a running server's pins are its own:
// collect through Server.CollectGarbage, POST /v1/admin/gc).
func CollectGarbage(ctx context.Context, metaStore meta.Store, blobs blobstore.Store, now time.Time, opts GCOptions) (api.GCReport, error) {
	return collect(ctx, metaStore, blobs, now, opts, &pins{})
}

func collect(ctx context.Context, metaStore meta.Store, blobs blobstore.Store, now time.Time, opts GCOptions, p *pins) (api.GCReport, error) {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGCGrace
	}
	rep := api.GCReport{DryRun: opts.DryRun, Removed: []string{}}
	cutoff := now.Add(-opts.Grace)
	var candidates []blobstore.Descriptor
	err := blobs.List(ctx, func(d blobstore.Descriptor) error {
		rep.Blobs++
		if d.Modified.After(cutoff) {
			rep.Young++
			return nil
		}
		candidates = append(candidates, d)
		return nil
	})
	if err != nil {
		return rep, err
	}
	for batch := range slices.Chunk(candidates, gcBatch) {
		if err := collectBatch(ctx, metaStore, blobs, cutoff, batch, p, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// collectBatch removes the candidates that, with pins held off, neither a
// version nor a pin names and no store made young again.
func collectBatch(ctx context.Context, metaStore meta.Store, blobs blobstore.Store, cutoff time.Time, batch []blobstore.Descriptor, p *pins, rep *api.GCReport) error {
	defer p.removal()()
	// Pins first, references after: a pin released since was released
	// after its version committed, which the references then show.
	held := p.held(digests(batch)...)
	referenced, err := referencedBlobs(ctx, metaStore)
	if err != nil {
		return err
	}
	for _, d := range batch {
		if referenced[d.Digest] || held[d.Digest] {
			rep.Referenced++
			continue
		}
		cur, err := blobs.Stat(ctx, d.Digest)
		if err != nil || cur.Modified.After(cutoff) {
			rep.Young++
			continue
		}
		if !rep.DryRun {
			if err := blobs.Delete(ctx, d.Digest); err != nil {
				return err
			}
		}
		rep.Removed = append(rep.Removed, d.Digest)
		rep.RemovedBytes += d.Size
	}
	return nil
}

// digests lists the descriptors' digests.
func digests(ds []blobstore.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Digest
	}
	return out
}

// referencedBlobs is every digest a version's record names.
func referencedBlobs(ctx context.Context, metaStore meta.Store) (map[string]bool, error) {
	versions, err := metaStore.Search(ctx, meta.Query{States: allStates})
	if err != nil {
		return nil, err
	}
	referenced := map[string]bool{}
	for _, v := range versions {
		for _, d := range v.Blobs {
			referenced[d] = true
		}
	}
	return referenced, nil
}

// discard removes blobs that a failed upload or certification stored
// and released, unless a version names them or another pin holds them
// (the same bytes uploaded at once): what fails leaves nothing behind,
// without waiting for garbage collection. It returns once they are
// removed (or left to garbage collection, logged, when storage fails).
//
// Discards that arrive together are removed together: one caller
// removes every digest waiting, with one read of the references, while
// the others wait for it, so a flood of failing uploads costs the gate
// one turn per batch, not one per upload.
func (s *Server) discard(digests ...string) {
	done := make(chan struct{})
	q := &s.discards
	q.mu.Lock()
	q.digests = append(q.digests, digests...)
	q.waiters = append(q.waiters, done)
	lead := !q.running
	q.running = true
	q.mu.Unlock()
	if !lead {
		<-done
		return
	}
	for {
		q.mu.Lock()
		batch, waiters := q.digests, q.waiters
		q.digests, q.waiters = nil, nil
		if len(waiters) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		s.removeUnreferenced(batch)
		for _, w := range waiters {
			close(w)
		}
	}
}

// discardQueue gathers the discards waiting for the one removing.
type discardQueue struct {
	mu      sync.Mutex
	running bool
	digests []string
	waiters []chan struct{}
}

// removeUnreferenced removes those of digests that neither a pin nor a
// version holds. It runs on a context of its own, as a request's may be
// what failed.
func (s *Server) removeUnreferenced(digests []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer s.pins.removal()()
	held := s.pins.held(digests...) // before the references: see collectBatch
	referenced, err := referencedBlobs(ctx, s.meta)
	if err != nil {
		s.log.Warn("a failed upload's bytes are left to garbage collection", slog.Any("error", err))
		return
	}
	for _, d := range slices.Compact(slices.Sorted(slices.Values(digests))) {
		if referenced[d] || held[d] {
			continue
		}
		if err := s.blobs.Delete(ctx, d); err != nil {
			s.log.Warn("a failed upload's bytes are left to garbage collection", slog.String("digest", d), slog.Any("error", err))
		}
	}
}

// staleAfter is how old a staged upload or a work directory must be before
// the janitor takes it for what a killed process left.
const staleAfter = time.Hour

// Sweep removes what a process killed mid-way leaves: staged uploads of
// the blob store older than staleAfter, and certification work
// directories no certification of this process is using (at start, every
// one of them).
func (s *Server) Sweep(ctx context.Context) error {
	n, err := s.blobs.Sweep(ctx, s.now().Add(-staleAfter))
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(s.cfg.WorkDir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("work directory: %w", err)
	}
	dirs := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workPrefix) {
			continue
		}
		path := filepath.Join(s.cfg.WorkDir, e.Name())
		if s.workInUse(path) {
			continue
		}
		if err := os.RemoveAll(path); err == nil {
			dirs++
		}
	}
	if n+dirs > 0 {
		s.log.Info("swept what interrupted work left", slog.Int("staged_uploads", n), slog.Int("work_dirs", dirs))
	}
	return nil
}

// RunJanitor sweeps at once, then sweeps and collects garbage every
// interval (Config.JanitorInterval) until ctx is done.
func (s *Server) RunJanitor(ctx context.Context) {
	if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("janitor: sweep", slog.Any("error", err))
	}
	if s.cfg.JanitorInterval <= 0 {
		return
	}
	t := time.NewTicker(s.cfg.JanitorInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("janitor: sweep", slog.Any("error", err))
		}
		if _, err := s.CollectGarbage(ctx, GCOptions{Grace: s.cfg.GCGrace}); err != nil && ctx.Err() == nil {
			s.log.Error("janitor: garbage collection", slog.Any("error", err))
		}
	}
}

// workPrefix names certification work directories.
const workPrefix = "certify-"

func (s *Server) workInUse(path string) bool {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	return s.work[path]
}

// newWorkDir makes a certification work directory and marks it in use
// until done is called, which removes it.
func (s *Server) newWorkDir() (dir string, done func(), err error) {
	dir, err = os.MkdirTemp(s.cfg.WorkDir, workPrefix)
	if err != nil {
		return "", nil, err
	}
	s.workMu.Lock()
	s.work[dir] = true
	s.workMu.Unlock()
	return dir, func() {
		os.RemoveAll(dir)
		s.workMu.Lock()
		delete(s.work, dir)
		s.workMu.Unlock()
	}, nil
}
