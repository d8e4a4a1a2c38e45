package registry

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/signing/signer"
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
			priv, _, _ := signer.GenerateKey(nil)
			signer, _ := signer.Load(priv, nil)
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

// countingSearch counts Searches, and holds the first until released.
type countingSearch struct {
	meta.Store
	mu       sync.Mutex
	searches int
	first    chan struct{}
}

func (c *countingSearch) Search(ctx context.Context, q meta.Query) ([]meta.Version, error) {
	c.mu.Lock()
	c.searches++
	n := c.searches
	c.mu.Unlock()
	if n == 1 {
		<-c.first
	}
	return c.Store.Search(ctx, q)
}

// TestDiscardsArriveTogetherAndGoTogether: 20 failed uploads discarding
// at once while a removal runs cost one more read of the references, not
// twenty, and every blob goes.
func TestDiscardsArriveTogetherAndGoTogether(t *testing.T) {
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
	counting := &countingSearch{Store: m, first: make(chan struct{})}
	priv, _, _ := signer.GenerateKey(nil)
	signer, _ := signer.Load(priv, nil)
	s, err := New(Config{Meta: counting, Blobs: blobs, Signer: signer, Worker: []string{"unused"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var stored []string
	for i := range 21 {
		data := []byte(fmt.Sprintf("failed upload %d", i))
		d, err := blobs.Put(ctx, bytes.NewReader(data), "", int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, d.Digest)
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.discard(stored[0]) }) // the one removing, held in its Search
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		counting.mu.Lock()
		started := counting.searches == 1
		counting.mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first discard never read the references")
		}
	}
	for _, d := range stored[1:] {
		wg.Go(func() { s.discard(d) })
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.discards.mu.Lock()
		waiting := len(s.discards.waiters)
		s.discards.mu.Unlock()
		if waiting == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d discards queued", waiting)
		}
	}
	close(counting.first)
	wg.Wait()
	if counting.searches != 2 {
		t.Errorf("%d reads of the references for 21 discards, want 2 (one per batch)", counting.searches)
	}
	for _, d := range stored {
		if _, err := blobs.Stat(ctx, d); err == nil {
			t.Errorf("%s was not removed", d)
		}
	}
}
