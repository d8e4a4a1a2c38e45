package s3blobs_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/blobtest"
	"github.com/flowgen-dev/flowgen/runtime/s3blobs"
	"github.com/flowgen-dev/flowgen/runtime/s3blobs/s3test"
)

func TestConformance(t *testing.T) {
	b := s3test.Blobs(t)
	blobtest.Run(t, b, s3test.FreshBucket(t, b)+"/")
}

// TestETagIsTheContentMD5: writes are single PUTs, so the object's ETag is
// the MD5 of its bytes, which connectors may report without asking.
func TestETagIsTheContentMD5(t *testing.T) {
	b := s3test.Blobs(t)
	bucket := s3test.FreshBucket(t, b)
	data := []byte("invoice body")
	if err := b.WriteBlob(context.Background(), bucket+"/a/b.txt", data); err != nil {
		t.Fatal(err)
	}
	info, err := b.Client().StatObject(context.Background(), bucket, "a/b.txt", minio.StatObjectOptions{})
	sum := md5.Sum(data)
	if err != nil || info.ETag != hex.EncodeToString(sum[:]) {
		t.Fatalf("ETag %q (%v), MD5 %x", info.ETag, err, sum)
	}
}

func TestErrorKinds(t *testing.T) {
	ctx := context.Background()
	b := s3test.Blobs(t)
	if _, err := b.ReadBlob(ctx, "flowgen-no-such-bucket/x"); runtime.KindOf(err) != runtime.Permanent {
		t.Errorf("missing bucket: %v", err)
	}
	cfg := s3test.Config()
	cfg.SecretKey = "wrong-secret-key"
	bad, err := s3blobs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.WriteBlob(ctx, "any/x", []byte("x")); runtime.KindOf(err) != runtime.Auth {
		t.Errorf("wrong credentials: %v (kind %s), want Auth", err, runtime.KindOf(err))
	}
	cfg = s3test.Config()
	cfg.Endpoint = "127.0.0.1:1" // nothing listens
	down, _ := s3blobs.New(cfg)
	if err := down.WriteBlob(ctx, "any/x", []byte("x")); runtime.KindOf(err) != runtime.Transient {
		t.Errorf("server down: %v (kind %s), want Transient", err, runtime.KindOf(err))
	}
}
