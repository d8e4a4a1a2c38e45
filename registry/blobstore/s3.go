package blobstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// partSize is the multipart part size of uploads (minio-go's minimum).
const partSize = 16 << 20

// S3 stores blobs in one bucket of S3-compatible storage under
// PREFIX/blobs/sha256/<hex>. An upload streams to PREFIX/uploads/<random>
// while its digest is computed, and is copied into place server-side only
// once verified; the staging object is removed whatever happens. Before it
// starts, an upload writes PREFIX/uploads/<random>.pending, removed with
// the staging object: a process killed mid-upload leaves the marker, by
// which Sweep finds the multipart upload to abort (MinIO lists incomplete
// uploads only by exact object name).
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
}

// NewS3 stores blobs in bucket (which must exist) under prefix ("" or a
// path ending in "/").
func NewS3(client *minio.Client, bucket, prefix string) *S3 {
	return &S3{client: client, bucket: bucket, prefix: prefix}
}

func (s *S3) key(digest string) (string, error) {
	hexPart, err := CheckDigest(digest)
	if err != nil {
		return "", err
	}
	return s.prefix + "blobs/sha256/" + hexPart, nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, r io.Reader, want string, limit int64) (Descriptor, error) {
	if err := checkPut(want, limit); err != nil {
		return Descriptor{}, err
	}
	var id [12]byte
	rand.Read(id[:])
	staging := s.prefix + "uploads/" + hex.EncodeToString(id[:])
	if _, err := s.client.PutObject(ctx, s.bucket, staging+pendingSuffix, strings.NewReader(""), 0, minio.PutObjectOptions{}); err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: s3 upload: %w", err)
	}
	defer func() {
		bg := context.WithoutCancel(ctx)
		s.client.RemoveIncompleteUpload(bg, s.bucket, staging)
		s.client.RemoveObject(bg, s.bucket, staging, minio.RemoveObjectOptions{})
		s.client.RemoveObject(bg, s.bucket, staging+pendingSuffix, minio.RemoveObjectOptions{})
	}()
	hr := newHashingReader(r, limit)
	// The size is unknown while streaming; an explicit part size bounds the
	// memory minio-go buffers per part (its default for unknown sizes is
	// over 500 MiB).
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: partSize}
	if _, err := s.client.PutObject(ctx, s.bucket, staging, hr, -1, opts); err != nil {
		if errors.Is(err, ErrTooLarge) || hr.n > limit {
			return Descriptor{}, ErrTooLarge
		}
		return Descriptor{}, fmt.Errorf("blobstore: s3 upload: %w", err)
	}
	desc, err := hr.verify(want)
	if err != nil {
		return Descriptor{}, err
	}
	// Copying over the same bytes stores them once and refreshes their
	// modification time.
	final, _ := s.key(desc.Digest)
	_, err = s.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: s.bucket, Object: final}, minio.CopySrcOptions{Bucket: s.bucket, Object: staging})
	if err != nil {
		return Descriptor{}, fmt.Errorf("blobstore: s3 copy into place: %w", err)
	}
	return desc, nil
}

// Open implements Store.
func (s *S3) Open(ctx context.Context, digest string) (io.ReadCloser, Descriptor, error) {
	key, err := s.key(digest)
	if err != nil {
		return nil, Descriptor{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Descriptor{}, s.classify(digest, err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, Descriptor{}, s.classify(digest, err)
	}
	return obj, Descriptor{Digest: digest, Size: info.Size, Modified: info.LastModified}, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, digest string) (Descriptor, error) {
	key, err := s.key(digest)
	if err != nil {
		return Descriptor{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Descriptor{}, s.classify(digest, err)
	}
	return Descriptor{Digest: digest, Size: info.Size, Modified: info.LastModified}, nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, fn func(Descriptor) error) error {
	prefix := s.prefix + "blobs/sha256/"
	objects, stop := s.list(ctx, prefix)
	defer stop()
	for obj := range objects {
		if obj.Err != nil {
			return fmt.Errorf("blobstore: s3 list: %w", obj.Err)
		}
		digest := "sha256:" + strings.TrimPrefix(obj.Key, prefix)
		if _, err := CheckDigest(digest); err != nil {
			continue
		}
		if err := fn(Descriptor{Digest: digest, Size: obj.Size, Modified: obj.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

// list lists the objects under prefix. Call stop when done, also after
// leaving the loop early: minio's listing goroutine, once cancelled, still
// sends the cancellation to the channel, and blocks forever unless someone
// reads it; stop cancels and drains.
func (s *S3) list(ctx context.Context, prefix string) (objects <-chan minio.ObjectInfo, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true})
	return ch, func() {
		cancel()
		for range ch {
		}
	}
}

// pendingSuffix marks an upload in progress (see S3).
const pendingSuffix = ".pending"

// Sweep implements Store: staging objects older than before, and for each
// stale pending marker the multipart upload it names.
func (s *S3) Sweep(ctx context.Context, before time.Time) (int, error) {
	objects, stop := s.list(ctx, s.prefix+"uploads/")
	defer stop()
	n := 0
	for obj := range objects {
		if obj.Err != nil {
			return n, fmt.Errorf("blobstore: s3 list: %w", obj.Err)
		}
		if !obj.LastModified.Before(before) {
			continue
		}
		if staging, ok := strings.CutSuffix(obj.Key, pendingSuffix); ok {
			if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, staging); err != nil {
				return n, fmt.Errorf("blobstore: s3 abort %s: %w", staging, err)
			}
		}
		if s.client.RemoveObject(ctx, s.bucket, obj.Key, minio.RemoveObjectOptions{}) == nil {
			n++
		}
	}
	return n, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, digest string) error {
	key, err := s.key(digest)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return s.classify(digest, err)
	}
	return nil
}

func (s *S3) classify(digest string, err error) error {
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return fmt.Errorf("%w: %s", ErrNotFound, digest)
	}
	return fmt.Errorf("blobstore: s3 %s: %w", s.bucket, err)
}
