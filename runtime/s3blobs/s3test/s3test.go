// Package s3test gives tests blob storage on the S3-compatible server CI
// starts (MinIO on 127.0.0.1:9000), like pgtest does for PostgreSQL.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/runtime/s3blobs"
)

// Config is the test server: $FLOWGEN_TEST_S3_ENDPOINT,
// $FLOWGEN_TEST_S3_ACCESS_KEY and $FLOWGEN_TEST_S3_SECRET_KEY, else the
// server .ci/run starts.
func Config() s3blobs.Config {
	get := func(env, def string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		return def
	}
	return s3blobs.Config{
		Endpoint:  get("FLOWGEN_TEST_S3_ENDPOINT", "127.0.0.1:9000"),
		AccessKey: get("FLOWGEN_TEST_S3_ACCESS_KEY", "flowgen"),
		SecretKey: get("FLOWGEN_TEST_S3_SECRET_KEY", "flowgen-test-secret"),
	}
}

// Blobs connects to the test server. A server that is not there fails the
// test: CI always has one.
func Blobs(t testing.TB) *s3blobs.Blobs {
	t.Helper()
	b, err := s3blobs.New(Config())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bucket makes sure bucket exists on the test server (buckets named by
// fixtures are shared between runs and left in place).
func Bucket(t testing.TB, b *s3blobs.Blobs, bucket string) {
	t.Helper()
	ctx := context.Background()
	exists, err := b.Client().BucketExists(ctx, bucket)
	if err != nil {
		t.Fatalf("S3 test server at %s: %v", Config().Endpoint, err)
	}
	if !exists {
		if err := b.Client().MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
			if exists, _ := b.Client().BucketExists(ctx, bucket); !exists {
				t.Fatalf("make bucket %s: %v", bucket, err)
			}
		}
	}
}

// FreshBucket creates a bucket for one test and removes it, with its
// objects, when the test ends.
func FreshBucket(t testing.TB, b *s3blobs.Blobs) string {
	t.Helper()
	r := make([]byte, 6)
	rand.Read(r)
	bucket := "flowgen-test-" + hex.EncodeToString(r)
	Bucket(t, b, bucket)
	t.Cleanup(func() {
		ctx := context.Background()
		for obj := range b.Client().ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if obj.Err == nil {
				b.Client().RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{})
			}
		}
		b.Client().RemoveBucket(ctx, bucket)
	})
	return bucket
}
