package registry

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/signing"
)

// commitDuringSearch is a metadata store whose next Search runs hook
// once it has read the versions: another upload committing its version
// and releasing its pin at the worst moment, just after a removal read
// the references.
type commitDuringSearch struct {
	meta.Store
	once sync.Once
	hook func()
}

func (c *commitDuringSearch) Search(ctx context.Context, q meta.Query) ([]meta.Version, error) {
	vs, err := c.Store.Search(ctx, q)
	c.once.Do(c.hook)
	return vs, err
}

// TestRemovalSeesACommitThatRacesIt: upload B pins and stores a blob;
// while a removal (a failed upload's discard, or a collection with no
// grace) reads what versions reference, B commits its version naming the
// blob and releases its pin. The blob survives both.
func TestRemovalSeesACommitThatRacesIt(t *testing.T) {
	for _, removal := range []string{"discard", "collect"} {
		t.Run(removal, func(t *testing.T) {
			dir := t.TempDir()
			m, err := meta.OpenBolt(filepath.Join(dir, "r.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			blobs, err := blobstore.NewDisk(filepath.Join(dir, "blobs"))
			if err != nil {
				t.Fatal(err)
			}
			racing := &commitDuringSearch{Store: m}
			priv, _, _ := signing.GenerateKey(nil)
			signer, _ := signing.LoadSigner(priv, nil)
			s, err := New(Config{Meta: racing, Blobs: blobs, Signer: signer, Worker: []string{"unused"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			data := []byte("the same bytes, uploaded twice")
			b := &staging{s: s}
			d, err := b.put(ctx, bytes.NewReader(data), sha256Digest(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			racing.hook = func() {
				v := meta.Version{Namespace: "payments", Connector: "payments.x", Version: "1.0.0", Module: "flowgen.dev/connectors/payments/x",
					ModuleVersion: "v1.0.0", Digest: d.Digest, State: meta.Pending, Blobs: map[string]string{"artifact.zip": d.Digest}, Created: time.Now()}
				if _, _, err := m.CreateVersion(ctx, v); err != nil {
					t.Error(err)
				}
				b.end(true)
			}
			if removal == "discard" {
				s.discard(d.Digest)
			} else if _, err := s.CollectGarbage(ctx, GCOptions{Grace: time.Nanosecond}); err != nil {
				t.Fatal(err)
			}
			if _, err := blobs.Stat(ctx, d.Digest); err != nil {
				t.Fatalf("a blob a committed version names was removed: %v", err)
			}
		})
	}
}
