package registry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// Blob ownership. A blob belongs to the versions whose records name it
// (meta.Version.Blobs); an upload never deletes one, even one it stored
// itself, because another upload of the same bytes may be relying on it.
// What failed uploads leave is garbage: CollectGarbage removes a blob when
// no version refers to it and it has not been stored for the grace period.
// Storing existing bytes refreshes their age (blobstore.Store.Put), an
// upload holds gcMu's read lock from its first store until its version is
// committed, and each candidate is checked again just before it is
// removed, so a blob an upload is about to commit is never collected.

// DefaultGCGrace is how long an unreferenced blob is kept.
const DefaultGCGrace = 24 * time.Hour

// GCOptions steer a collection.
type GCOptions struct {
	// Grace is the age below which an unreferenced blob is kept (default
	// DefaultGCGrace).
	Grace time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// CollectGarbage removes blobs that no version refers to and that are
// older than the grace period (with DryRun, only reports them), holding
// uploads off while it decides.
func (s *Server) CollectGarbage(ctx context.Context, opts GCOptions) (api.GCReport, error) {
	if opts.Grace <= 0 {
		opts.Grace = s.cfg.GCGrace
	}
	rep, err := CollectGarbage(ctx, s.meta, s.blobs, s.now(), opts, &s.gcMu)
	if err == nil && !opts.DryRun && len(rep.Removed) > 0 {
		s.log.Info("garbage collected", slog.Int("blobs", len(rep.Removed)), slog.Int64("bytes", rep.RemovedBytes))
	}
	return rep, err
}

// CollectGarbage is garbage collection on the stores themselves, for
// registryd gc when no server runs; uploads, when lock is not nil, hold its
// read side (Server.CollectGarbage passes its own).
func CollectGarbage(ctx context.Context, metaStore meta.Store, blobs blobstore.Store, now time.Time, opts GCOptions, lock sync.Locker) (api.GCReport, error) {
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
	if len(candidates) == 0 {
		return rep, nil
	}
	// With uploads held off, read what is referenced now and remove the
	// rest, each checked again for a store that made it young.
	if lock != nil {
		lock.Lock()
		defer lock.Unlock()
	}
	versions, err := metaStore.Search(ctx, meta.Query{States: allStates})
	if err != nil {
		return rep, err
	}
	referenced := map[string]bool{}
	for _, v := range versions {
		for _, d := range v.Blobs {
			referenced[d] = true
		}
	}
	for _, d := range candidates {
		if referenced[d.Digest] {
			rep.Referenced++
			continue
		}
		cur, err := blobs.Stat(ctx, d.Digest)
		if err != nil || cur.Modified.After(cutoff) {
			rep.Young++
			continue
		}
		if !opts.DryRun {
			if err := blobs.Delete(ctx, d.Digest); err != nil {
				return rep, err
			}
		}
		rep.Removed = append(rep.Removed, d.Digest)
		rep.RemovedBytes += d.Size
	}
	return rep, nil
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
