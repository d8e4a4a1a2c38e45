package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A bbolt file never shrinks: pages freed by deletions are reused, not
// returned. Compact writes the live data into a fresh file and puts it in
// the old one's place.

// compactTxSize bounds the data one transaction of Compact copies.
const compactTxSize = 64 << 20

// Compact rewrites the store file at path with only its live pages and
// returns the file's size before and after. It holds the file's lock
// throughout, so it fails with ErrLocked while a process has the store
// open, and it replaces the file by a rename only once the copy is
// complete and synced: a crash leaves the old file as it was (and,
// possibly, a stale path.compact beside it, which the next Compact
// overwrites).
func Compact(path string, lockTimeout time.Duration) (before, after int64, err error) {
	if lockTimeout == 0 {
		lockTimeout = 2 * time.Second
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	src, err := bolt.Open(path, 0, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return 0, 0, fmt.Errorf("compact %s: %w (waited %s)", path, ErrLocked, lockTimeout)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	dst, err := bolt.Open(tmp, info.Mode().Perm(), &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := bolt.Compact(dst, src, compactTxSize); err != nil {
		dst.Close()
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	now, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	return info.Size(), now.Size(), nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
