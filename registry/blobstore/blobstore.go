// Package blobstore is the registry's content-addressed blob storage:
// artifact zips, SBOMs, signatures and reports, each stored under the
// sha256 of its bytes. Two backends implement Store, a local directory
// (the zero-setup default) and S3-compatible storage through minio-go, and
// both pass one conformance suite (package blobstoretest).
//
// Every backend guarantees: a blob is visible under its digest only once
// all of it is stored and its digest verified; a failed, oversized or
// mismatched upload leaves nothing behind; storing the same bytes twice
// stores them once but refreshes their Modified time, so that a blob an
// upload relies on is young again for garbage collection's grace period.
package blobstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
)

// Descriptor identifies a stored blob.
type Descriptor struct {
	// Digest is "sha256:" and 64 lowercase hex digits.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	// Modified is when the blob was last stored (Stat and List set it).
	Modified time.Time `json:"-"`
}

// Store is content-addressed blob storage. Implementations are safe for
// concurrent use.
type Store interface {
	// Put stores what r yields. want, when not empty, is the digest the
	// content must have; limit bounds its size. It fails with a
	// *DigestMismatchError or ErrTooLarge (storing nothing) when either does
	// not hold.
	Put(ctx context.Context, r io.Reader, want string, limit int64) (Descriptor, error)
	// Open returns a reader of the blob, which the caller closes, or
	// ErrNotFound.
	Open(ctx context.Context, digest string) (io.ReadCloser, Descriptor, error)
	// Stat describes the blob or returns ErrNotFound.
	Stat(ctx context.Context, digest string) (Descriptor, error)
	// Delete removes the blob; deleting a missing blob is not an error.
	Delete(ctx context.Context, digest string) error
	// List calls fn for every stored blob, in no particular order, until
	// fn returns an error, which List returns.
	List(ctx context.Context, fn func(Descriptor) error) error
	// Sweep removes what interrupted uploads left staged (a process killed
	// mid-upload) before the given time, and returns how many it removed.
	Sweep(ctx context.Context, before time.Time) (int, error)
}

// Errors callers branch on.
var (
	ErrNotFound      = errors.New("blob not found")
	ErrTooLarge      = errors.New("blob larger than the limit")
	ErrInvalidDigest = errors.New("invalid digest: want sha256:<64 lowercase hex digits>")
)

// DigestMismatchError reports content whose digest is not the one promised.
type DigestMismatchError struct {
	Want, Got string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("digest mismatch: the upload promised %s but its content is %s", e.Want, e.Got)
}

// CheckDigest returns the hex part of a well-formed digest.
func CheckDigest(digest string) (string, error) {
	hexPart, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexPart) != 64 || strings.ToLower(hexPart) != hexPart {
		return "", fmt.Errorf("%w: %q", ErrInvalidDigest, digest)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", fmt.Errorf("%w: %q", ErrInvalidDigest, digest)
	}
	return hexPart, nil
}

// hashingReader hashes and counts what passes through it and fails once
// more than limit bytes have been read.
type hashingReader struct {
	r     io.Reader
	h     hash.Hash
	n     int64
	limit int64
}

func newHashingReader(r io.Reader, limit int64) *hashingReader {
	return &hashingReader{r: r, h: sha256.New(), limit: limit}
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if h.n > h.limit {
		return n, ErrTooLarge
	}
	return n, err
}

// verify checks the digest once everything has been read.
func (h *hashingReader) verify(want string) (Descriptor, error) {
	d := Descriptor{Digest: "sha256:" + hex.EncodeToString(h.h.Sum(nil)), Size: h.n}
	if want != "" && want != d.Digest {
		return d, &DigestMismatchError{Want: want, Got: d.Digest}
	}
	return d, nil
}

// checkPut validates Put's arguments.
func checkPut(want string, limit int64) error {
	if want != "" {
		if _, err := CheckDigest(want); err != nil {
			return err
		}
	}
	if limit <= 0 {
		return fmt.Errorf("blobstore: limit must be positive, got %d", limit)
	}
	return nil
}
