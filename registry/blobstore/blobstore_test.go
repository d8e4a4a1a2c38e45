package blobstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/blobstore/blobstoretest"
	"github.com/flowgen-dev/flowgen/runtime/s3blobs/s3test"
)

func TestDiskConformance(t *testing.T) {
	var dirs []string
	blobstoretest.Run(t, func(t *testing.T) blobstore.Store {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		s, err := blobstore.NewDisk(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	// Whatever happened, no staged upload was left behind.
	for _, d := range dirs {
		if left, _ := os.ReadDir(filepath.Join(d, "uploads")); len(left) > 0 {
			t.Errorf("%s: %d staged uploads left", d, len(left))
		}
	}
}

func TestS3Conformance(t *testing.T) {
	b := s3test.Blobs(t)
	blobstoretest.Run(t, func(t *testing.T) blobstore.Store {
		bucket := s3test.FreshBucket(t, b)
		t.Cleanup(func() {
			// Checked before FreshBucket's cleanup empties the bucket.
			for obj := range b.Client().ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: "reg/uploads/", Recursive: true}) {
				if obj.Err == nil {
					t.Errorf("staged upload left behind: %s", obj.Key)
				}
			}
		})
		return blobstore.NewS3(b.Client(), bucket, "reg/")
	})
}

// TestDiskSweep: a staged upload a killed process left is removed once it
// is older than the cut-off, and one still being written is not.
func TestDiskSweep(t *testing.T) {
	dir := t.TempDir()
	s, err := blobstore.NewDisk(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "uploads", "upload-killed")
	fresh := filepath.Join(dir, "uploads", "upload-in-flight")
	os.WriteFile(old, []byte("half"), 0o644)
	os.WriteFile(fresh, []byte("half"), 0o644)
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(old, hourAgo, hourAgo)
	n, err := s.Sweep(context.Background(), time.Now().Add(-10*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("Sweep: %d %v", n, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the killed upload is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the upload in flight was removed: %v", err)
	}
}

// TestS3Sweep: a staging object and an incomplete multipart upload under
// the prefix are removed.
func TestS3Sweep(t *testing.T) {
	b := s3test.Blobs(t)
	bucket := s3test.FreshBucket(t, b)
	ctx := context.Background()
	client := b.Client()
	if _, err := client.PutObject(ctx, bucket, "reg/uploads/killed", bytes.NewReader([]byte("half")), 4, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Put killed mid-stream: its pending marker and its multipart upload.
	core := minio.Core{Client: client}
	if _, err := core.NewMultipartUpload(ctx, bucket, "reg/uploads/killed-multipart", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(ctx, bucket, "reg/uploads/killed-multipart.pending", bytes.NewReader(nil), 0, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	ups := 0
	for range client.ListIncompleteUploads(ctx, bucket, "reg/uploads/killed-multipart", false) {
		ups++
	}
	if ups != 1 {
		t.Fatalf("the planted multipart upload is not listed (%d)", ups)
	}
	s := blobstore.NewS3(client, bucket, "reg/")
	n, err := s.Sweep(ctx, time.Now().Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("Sweep: %d %v", n, err)
	}
	for obj := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "reg/uploads/", Recursive: true}) {
		t.Errorf("left behind: %s %v", obj.Key, obj.Err)
	}
	for up := range client.ListIncompleteUploads(ctx, bucket, "reg/uploads/killed-multipart", false) {
		t.Errorf("incomplete upload left behind: %s %v", up.Key, up.Err)
	}
}
