// Package s3blobs backs the blob capabilities with S3-compatible storage
// through github.com/minio/minio-go/v7. A blob name is "bucket/key"; the
// first path segment names the bucket.
package s3blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Blobs implements runtime.BlobReader and runtime.BlobWriter on one S3
// endpoint. Writes are single PUTs, so an object is replaced whole or not
// at all, and its ETag is the MD5 of its content.
type Blobs struct {
	client *minio.Client
}

// Config locates an S3-compatible endpoint.
type Config struct {
	Endpoint             string // host:port
	AccessKey, SecretKey string
	Secure               bool // HTTPS
	Region               string
}

// New connects to the endpoint (lazily: no request is made until the
// first read or write).
func New(cfg Config) (*Blobs, error) {
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.Secure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 %s: %w", cfg.Endpoint, err)
	}
	return &Blobs{client: c}, nil
}

// Client is the underlying minio-go client, for setup such as creating
// buckets.
func (b *Blobs) Client() *minio.Client { return b.client }

func split(name string) (bucket, key string, err error) {
	bucket, key, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	if !ok || bucket == "" || key == "" {
		return "", "", runtime.Errorf(runtime.PolicyDenied, "blob name %q must be bucket/key", name)
	}
	return bucket, key, nil
}

// ReadBlob returns the object's content; a missing object or bucket is
// Permanent, other failures Transient.
func (b *Blobs) ReadBlob(ctx context.Context, name string) ([]byte, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	obj, err := b.client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, classify("read", name, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, classify("read", name, err)
	}
	return data, nil
}

// WriteBlob stores data as the object, replacing it whole.
func (b *Blobs) WriteBlob(ctx context.Context, name string, data []byte) error {
	bucket, key, err := split(name)
	if err != nil {
		return err
	}
	_, err = b.client.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
	if err != nil {
		return classify("write", name, err)
	}
	return nil
}

// classify maps S3 errors to the runtime's error kinds.
func classify(op, name string, err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch {
		case resp.Code == "NoSuchKey" || resp.Code == "NoSuchBucket":
			return runtime.Errorf(runtime.Permanent, "blob %s %s: %s", op, name, resp.Code)
		case resp.StatusCode == http.StatusForbidden || resp.Code == "AccessDenied" || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch":
			return runtime.Errorf(runtime.Auth, "blob %s %s: %s", op, name, resp.Code)
		case resp.StatusCode == http.StatusServiceUnavailable || resp.Code == "SlowDown":
			return runtime.NewError(runtime.RateLimited, fmt.Errorf("blob %s %s: %s", op, name, resp.Code))
		}
	}
	return runtime.Errorf(runtime.Transient, "blob %s %s: %w", op, name, err)
}
