package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Disk stores blobs in a local directory: blobs/sha256/ab/abcd... for each
// digest, uploads staged in uploads/ and renamed into place once verified.
type Disk struct {
	root string
}

// NewDisk uses (and creates) the directory root.
func NewDisk(root string) (*Disk, error) {
	for _, d := range []string{"blobs/sha256", "uploads"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("blobstore: %w", err)
		}
	}
	return &Disk{root: root}, nil
}

func (d *Disk) path(digest string) (string, error) {
	hexPart, err := CheckDigest(digest)
	if err != nil {
		return "", err
	}
	return filepath.Join(d.root, "blobs", "sha256", hexPart[:2], hexPart), nil
}

// Put implements Store.
func (d *Disk) Put(ctx context.Context, r io.Reader, want string, limit int64) (Descriptor, error) {
	if err := checkPut(want, limit); err != nil {
		return Descriptor{}, err
	}
	tmp, err := os.CreateTemp(filepath.Join(d.root, "uploads"), "upload-*")
	if err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	hr := newHashingReader(r, limit)
	_, err = io.Copy(tmp, contextReader{ctx, hr})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: upload: %w", err)
	}
	desc, err := hr.verify(want)
	if err != nil {
		return Descriptor{}, err
	}
	final, _ := d.path(desc.Digest)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: %w", err)
	}
	// Renaming over the same bytes stores them once and refreshes their
	// modification time.
	if err := os.Rename(tmp.Name(), final); err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: %w", err)
	}
	return desc, nil
}

// Open implements Store.
func (d *Disk) Open(_ context.Context, digest string) (io.ReadCloser, Descriptor, error) {
	p, err := d.path(digest)
	if err != nil {
		return nil, Descriptor{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Descriptor{}, fmt.Errorf("%w: %s", ErrNotFound, digest)
	}
	if err != nil {
		return nil, Descriptor{}, fmt.Errorf("blobstore: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Descriptor{}, fmt.Errorf("blobstore: %w", err)
	}
	return f, Descriptor{Digest: digest, Size: info.Size(), Modified: info.ModTime()}, nil
}

// Stat implements Store.
func (d *Disk) Stat(_ context.Context, digest string) (Descriptor, error) {
	p, err := d.path(digest)
	if err != nil {
		return Descriptor{}, err
	}
	info, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Descriptor{}, fmt.Errorf("%w: %s", ErrNotFound, digest)
	}
	if err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: %w", err)
	}
	return Descriptor{Digest: digest, Size: info.Size(), Modified: info.ModTime()}, nil
}

// List implements Store.
func (d *Disk) List(ctx context.Context, fn func(Descriptor) error) error {
	root := filepath.Join(d.root, "blobs", "sha256")
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("blobstore: %w", err)
		}
		if e.IsDir() || ctx.Err() != nil {
			return ctx.Err()
		}
		digest := "sha256:" + e.Name()
		if _, err := CheckDigest(digest); err != nil {
			return nil // not a blob
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("blobstore: %w", err)
		}
		return fn(Descriptor{Digest: digest, Size: info.Size(), Modified: info.ModTime()})
	})
}

// Sweep implements Store: staged files older than before.
func (d *Disk) Sweep(_ context.Context, before time.Time) (int, error) {
	dir := filepath.Join(d.root, "uploads")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("blobstore: %w", err)
	}
	n := 0
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}

// Delete implements Store.
func (d *Disk) Delete(_ context.Context, digest string) error {
	p, err := d.path(digest)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobstore: %w", err)
	}
	return nil
}

// contextReader stops reading once ctx is done.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
