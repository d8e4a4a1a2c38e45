// Package blobstoretest is the conformance suite every blobstore.Store
// backend passes, run against the real thing (a directory, MinIO).
package blobstoretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
)

// Run runs the suite; open returns a fresh, empty store.
func Run(t *testing.T, open func(t *testing.T) blobstore.Store) {
	ctx := context.Background()
	t.Run("PutOpenStat", func(t *testing.T) {
		s := open(t)
		data := []byte("artifact bytes")
		d, err := s.Put(ctx, bytes.NewReader(data), digest(data), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if d.Digest != digest(data) || d.Size != int64(len(data)) {
			t.Fatalf("descriptor %+v", d)
		}
		if got := read(t, s, d.Digest); !bytes.Equal(got, data) {
			t.Fatalf("read back %q", got)
		}
		if st, err := s.Stat(ctx, d.Digest); err != nil || st.Digest != d.Digest || st.Size != d.Size || st.Modified.IsZero() {
			t.Fatalf("stat %+v, %v", st, err)
		}
	})
	t.Run("PutWithoutPromiseComputesTheDigest", func(t *testing.T) {
		s := open(t)
		data := []byte("no promise")
		d, err := s.Put(ctx, bytes.NewReader(data), "", 100)
		if err != nil || d.Digest != digest(data) {
			t.Fatalf("%+v, %v", d, err)
		}
	})
	t.Run("MismatchStoresNothing", func(t *testing.T) {
		s := open(t)
		data := []byte("what was sent")
		promised := digest([]byte("what was promised"))
		_, err := s.Put(ctx, bytes.NewReader(data), promised, 1<<20)
		var mm *blobstore.DigestMismatchError
		if !errors.As(err, &mm) || mm.Want != promised || mm.Got != digest(data) {
			t.Fatalf("want a DigestMismatchError naming both digests, got %v", err)
		}
		for _, d := range []string{promised, digest(data)} {
			if _, err := s.Stat(ctx, d); !errors.Is(err, blobstore.ErrNotFound) {
				t.Errorf("after a mismatch, %s: %v", d, err)
			}
		}
	})
	t.Run("TooLargeStoresNothing", func(t *testing.T) {
		s := open(t)
		data := bytes.Repeat([]byte("x"), 1001)
		if _, err := s.Put(ctx, bytes.NewReader(data), "", 1000); !errors.Is(err, blobstore.ErrTooLarge) {
			t.Fatalf("want ErrTooLarge, got %v", err)
		}
		if _, err := s.Stat(ctx, digest(data)); !errors.Is(err, blobstore.ErrNotFound) {
			t.Errorf("an oversized upload is visible: %v", err)
		}
		if d, err := s.Put(ctx, bytes.NewReader(data[:1000]), "", 1000); err != nil || d.Size != 1000 {
			t.Errorf("exactly the limit: %+v, %v", d, err)
		}
	})
	t.Run("FailedUploadStoresNothing", func(t *testing.T) {
		s := open(t)
		data := bytes.Repeat([]byte("y"), 64<<10)
		r := io.MultiReader(bytes.NewReader(data[:32<<10]), errReader{})
		if _, err := s.Put(ctx, r, digest(data), 1<<20); err == nil {
			t.Fatal("an upload whose reader failed succeeded")
		}
		if _, err := s.Stat(ctx, digest(data)); !errors.Is(err, blobstore.ErrNotFound) {
			t.Errorf("a failed upload is visible: %v", err)
		}
	})
	t.Run("SameBytesTwiceIsANoOp", func(t *testing.T) {
		s := open(t)
		data := []byte("twice")
		a, err1 := s.Put(ctx, bytes.NewReader(data), "", 100)
		b, err2 := s.Put(ctx, bytes.NewReader(data), digest(data), 100)
		if err1 != nil || err2 != nil || a != b {
			t.Fatalf("%+v %v / %+v %v", a, err1, b, err2)
		}
	})
	t.Run("ConcurrentPutsOfTheSameBlob", func(t *testing.T) {
		s := open(t)
		data := random(t, 256<<10)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Put(ctx, bytes.NewReader(data), digest(data), 1<<20)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := read(t, s, digest(data)); !bytes.Equal(got, data) {
			t.Fatal("concurrent puts corrupted the blob")
		}
	})
	t.Run("LargeBlob", func(t *testing.T) {
		s := open(t)
		data := random(t, 20<<20) // beyond one multipart part
		d, err := s.Put(ctx, bytes.NewReader(data), digest(data), 64<<20)
		if err != nil || d.Size != int64(len(data)) {
			t.Fatalf("%+v, %v", d, err)
		}
		if got := read(t, s, d.Digest); !bytes.Equal(got, data) {
			t.Fatal("large blob read back differently")
		}
	})
	t.Run("MissingAndMalformed", func(t *testing.T) {
		s := open(t)
		missing := digest([]byte("never stored"))
		if _, _, err := s.Open(ctx, missing); !errors.Is(err, blobstore.ErrNotFound) {
			t.Errorf("open missing: %v", err)
		}
		if _, err := s.Stat(ctx, missing); !errors.Is(err, blobstore.ErrNotFound) {
			t.Errorf("stat missing: %v", err)
		}
		for _, bad := range []string{"", "sha256:abc", "md5:" + missing[7:], "sha256:" + string(bytes.ToUpper([]byte(missing[7:]))), "sha256:../../etc/passwd"} {
			if _, err := s.Stat(ctx, bad); !errors.Is(err, blobstore.ErrInvalidDigest) {
				t.Errorf("stat %q: %v", bad, err)
			}
		}
		if _, err := s.Put(ctx, bytes.NewReader(nil), "sha256:nope", 10); !errors.Is(err, blobstore.ErrInvalidDigest) {
			t.Errorf("put with a malformed promise: %v", err)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		s := open(t)
		d, err := s.Put(ctx, bytes.NewReader([]byte("doomed")), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, d.Digest); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, d.Digest); !errors.Is(err, blobstore.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if err := s.Delete(ctx, d.Digest); err != nil {
			t.Errorf("deleting twice: %v", err)
		}
	})
	t.Run("List", func(t *testing.T) {
		s := open(t)
		want := map[string]int64{}
		for i := range 3 {
			b := random(t, 100+i)
			d, err := s.Put(ctx, bytes.NewReader(b), "", 1000)
			if err != nil {
				t.Fatal(err)
			}
			want[d.Digest] = d.Size
		}
		got := map[string]int64{}
		err := s.List(ctx, func(d blobstore.Descriptor) error {
			if d.Modified.IsZero() {
				t.Errorf("%s listed without a modification time", d.Digest)
			}
			got[d.Digest] = d.Size
			return nil
		})
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("List: %v %v, want %v", got, err, want)
		}
		stop := errors.New("stop")
		n := 0
		if err := s.List(ctx, func(blobstore.Descriptor) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("List did not stop at the callback's error: %v after %d", err, n)
		}
	})
	t.Run("StoringAgainRefreshesTheAge", func(t *testing.T) {
		s := open(t)
		b := random(t, 64)
		first, err := s.Put(ctx, bytes.NewReader(b), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stat(ctx, first.Digest)
		if err != nil {
			t.Fatal(err)
		}
		// Some stores keep whole seconds: store again until the time moves.
		for deadline := time.Now().Add(5 * time.Second); ; {
			if _, err := s.Put(ctx, bytes.NewReader(b), first.Digest, 100); err != nil {
				t.Fatal(err)
			}
			again, err := s.Stat(ctx, first.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if again.Modified.After(st.Modified) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("storing the same bytes again left the age at %s", again.Modified)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("SweepLeavesBlobsAlone", func(t *testing.T) {
		s := open(t)
		d, err := s.Put(ctx, bytes.NewReader([]byte("kept")), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.Sweep(ctx, time.Now().Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("Sweep of a clean store: %d %v", n, err)
		}
		if _, err := s.Stat(ctx, d.Digest); err != nil {
			t.Errorf("Sweep removed a blob: %v", err)
		}
	})
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t *testing.T, s blobstore.Store, d string) []byte {
	t.Helper()
	rc, desc, err := s.Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Size != int64(len(b)) {
		t.Fatalf("Open said %d bytes, read %d", desc.Size, len(b))
	}
	return b
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }
