// Package blobtest is the conformance suite every blob backend passes (the
// local directory and S3-compatible storage), so connectors behave the same
// on either.
package blobtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Blobs is a blob backend.
type Blobs interface {
	runtime.BlobReader
	runtime.BlobWriter
}

// Run checks b. prefix is prepended to every name ("" for a directory, a
// bucket and slash for S3).
func Run(t *testing.T, b Blobs, prefix string) {
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) {
		data := bytes.Repeat([]byte("flowgen\x00\xff"), 1000)
		if err := b.WriteBlob(ctx, prefix+"dir/round.bin", data); err != nil {
			t.Fatal(err)
		}
		got, err := b.ReadBlob(ctx, prefix+"dir/round.bin")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes (%v), wrote %d", len(got), err, len(data))
		}
	})
	t.Run("ReplaceWhole", func(t *testing.T) {
		for _, v := range []string{"a much longer first version", "short"} {
			if err := b.WriteBlob(ctx, prefix+"replace.txt", []byte(v)); err != nil {
				t.Fatal(err)
			}
			if got, err := b.ReadBlob(ctx, prefix+"replace.txt"); err != nil || string(got) != v {
				t.Fatalf("after writing %q read %q (%v)", v, got, err)
			}
		}
	})
	t.Run("EmptyBlob", func(t *testing.T) {
		if err := b.WriteBlob(ctx, prefix+"empty", nil); err != nil {
			t.Fatal(err)
		}
		if got, err := b.ReadBlob(ctx, prefix+"empty"); err != nil || len(got) != 0 {
			t.Fatalf("empty blob read as %q (%v)", got, err)
		}
	})
	t.Run("MissingIsPermanent", func(t *testing.T) {
		_, err := b.ReadBlob(ctx, prefix+"no/such/blob")
		if runtime.KindOf(err) != runtime.Permanent {
			t.Fatalf("reading a missing blob: %v (kind %s), want Permanent", err, runtime.KindOf(err))
		}
	})
	t.Run("BadNamesAreDenied", func(t *testing.T) {
		for _, name := range []string{"", "/"} {
			if err := b.WriteBlob(ctx, name, []byte("x")); runtime.KindOf(err) != runtime.PolicyDenied {
				t.Errorf("writing %q: %v, want PolicyDenied", name, err)
			}
		}
	})
}
