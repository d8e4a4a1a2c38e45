package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

const storageFlagsHelp = `  --data-dir DIR        embedded storage and the default signing key [REGISTRYD_DATA_DIR] (default ./registry-data)
  --database-url URL    PostgreSQL metadata instead of DATA_DIR/registry.db [REGISTRYD_DATABASE_URL]
  --s3-endpoint H:P     S3-compatible blob storage instead of DATA_DIR/blobs [REGISTRYD_S3_ENDPOINT]
  --s3-bucket NAME      [REGISTRYD_S3_BUCKET] (default flowgen-registry)
  --s3-prefix P         key prefix inside the bucket [REGISTRYD_S3_PREFIX]
  --s3-access-key K     [REGISTRYD_S3_ACCESS_KEY]
  --s3-secret-key S     [REGISTRYD_S3_SECRET_KEY]
  --s3-secure           use HTTPS [REGISTRYD_S3_SECURE=true]
`

// storageFlags locate the registry's metadata and blobs.
type storageFlags struct {
	dataDir, databaseURL                            string
	s3Endpoint, s3Bucket, s3Prefix, s3Key, s3Secret string
	s3Secure                                        bool
}

func (f *storageFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", envOr("REGISTRYD_DATA_DIR", "registry-data"), "embedded storage and the default signing key")
	fs.StringVar(&f.databaseURL, "database-url", envOr("REGISTRYD_DATABASE_URL", ""), "PostgreSQL URL for metadata (default: DATA_DIR/registry.db)")
	fs.StringVar(&f.s3Endpoint, "s3-endpoint", envOr("REGISTRYD_S3_ENDPOINT", ""), "S3-compatible endpoint host:port for blobs (default: DATA_DIR/blobs)")
	fs.StringVar(&f.s3Bucket, "s3-bucket", envOr("REGISTRYD_S3_BUCKET", "flowgen-registry"), "S3 bucket")
	fs.StringVar(&f.s3Prefix, "s3-prefix", envOr("REGISTRYD_S3_PREFIX", ""), "key prefix inside the bucket")
	fs.StringVar(&f.s3Key, "s3-access-key", envOr("REGISTRYD_S3_ACCESS_KEY", ""), "S3 access key")
	fs.StringVar(&f.s3Secret, "s3-secret-key", envOr("REGISTRYD_S3_SECRET_KEY", ""), "S3 secret key")
	fs.BoolVar(&f.s3Secure, "s3-secure", envOr("REGISTRYD_S3_SECURE", "") == "true", "use HTTPS for S3")
}

func (f *storageFlags) openMeta(ctx context.Context) (meta.Store, error) {
	if f.databaseURL != "" {
		return meta.OpenPostgres(ctx, f.databaseURL)
	}
	if err := os.MkdirAll(f.dataDir, 0o755); err != nil {
		return nil, err
	}
	return meta.OpenBolt(filepath.Join(f.dataDir, "registry.db"))
}

func (f *storageFlags) openBlobs(ctx context.Context) (blobstore.Store, error) {
	if f.s3Endpoint == "" {
		return blobstore.NewDisk(filepath.Join(f.dataDir, "blobs"))
	}
	if f.s3Key == "" || f.s3Secret == "" {
		return nil, errors.New("--s3-endpoint needs --s3-access-key and --s3-secret-key (or REGISTRYD_S3_ACCESS_KEY and REGISTRYD_S3_SECRET_KEY)")
	}
	client, err := minio.New(strings.TrimPrefix(strings.TrimPrefix(f.s3Endpoint, "http://"), "https://"), &minio.Options{
		Creds: credentials.NewStaticV4(f.s3Key, f.s3Secret, ""), Secure: f.s3Secure,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 %s: %w", f.s3Endpoint, err)
	}
	exists, err := client.BucketExists(ctx, f.s3Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 %s bucket %s: %w", f.s3Endpoint, f.s3Bucket, err)
	}
	if !exists {
		if err := client.MakeBucket(ctx, f.s3Bucket, minio.MakeBucketOptions{}); err != nil {
			return nil, fmt.Errorf("s3 %s: create bucket %s: %w", f.s3Endpoint, f.s3Bucket, err)
		}
	}
	return blobstore.NewS3(client, f.s3Bucket, f.s3Prefix), nil
}
