package blobstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// partSize is the multipart part size of uploads (minio-go's minimum).
const partSize = 16 << 20

// S3 stores blobs in one bucket of S3-compatible storage under
// PREFIX/blobs/sha256/<hex>. An upload streams to PREFIX/uploads/<random>
// while its digest is computed, and is copied into place server-side only
// once verified; the staging object is removed whatever happens.
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
	defer s.client.RemoveObject(context.WithoutCancel(ctx), s.bucket, staging, minio.RemoveObjectOptions{})
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
	final, _ := s.key(desc.Digest)
	if _, err := s.client.StatObject(ctx, s.bucket, final, minio.StatObjectOptions{}); err == nil {
		return desc, nil // already stored: the same bytes
	}
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
	return obj, Descriptor{Digest: digest, Size: info.Size}, nil
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
	return Descriptor{Digest: digest, Size: info.Size}, nil
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
