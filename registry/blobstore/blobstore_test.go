package blobstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
