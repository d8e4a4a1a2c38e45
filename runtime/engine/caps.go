package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/internal/atomicfile"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// StoreKV is the KV capability on the job store: each connector reads and
// writes its own namespace, durably.
type StoreKV struct {
	s         store.Store
	namespace string
}

// NewStoreKV returns the KV capability for a connector namespace.
func NewStoreKV(s store.Store, namespace string) *StoreKV { return &StoreKV{s, namespace} }

func (k *StoreKV) key(key string) []byte { return protocol.KVKey(k.namespace, key) }

// Get implements KVReader.
func (k *StoreKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := k.s.View(ctx, func(tx store.ReadTx) error {
		b, err := tx.Get(k.key(key))
		v = append([]byte(nil), b...)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, runtime.NewError(runtime.Transient, err)
	}
	return v, true, nil
}

// Put implements KVWriter.
func (k *StoreKV) Put(ctx context.Context, key string, value []byte) error {
	err := k.s.Update(ctx, func(tx store.Tx) error { return tx.Put(k.key(key), value) })
	if err != nil {
		return runtime.NewError(runtime.Transient, err)
	}
	return nil
}

// StoreDedupe is the dedupe capability on the job store: each connector
// claims keys in its own namespace, apart from other connectors' and
// from the engine's own exactly-once records, so no connector can claim,
// probe or spoil another's keys.
type StoreDedupe struct {
	s         store.Store
	namespace string
	now       func() time.Time
}

// NewStoreDedupe returns the dedupe capability for a connector namespace;
// now is time.Now when nil.
func NewStoreDedupe(s store.Store, namespace string, now func() time.Time) *StoreDedupe {
	if now == nil {
		now = time.Now
	}
	return &StoreDedupe{s, namespace, now}
}

// PutIfAbsent implements DedupeStore: a key is present until its TTL runs
// out; recording an expired key counts as absent. A claim an earlier
// release recorded outside any namespace still counts until it expires.
func (d *StoreDedupe) PutIfAbsent(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	k := protocol.CapabilityDedupeKey(d.namespace, key)
	now := d.now()
	present := func(tx store.Tx, k []byte) (bool, error) {
		v, err := tx.Get(k)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil && len(v) == 8 && int64(binary.BigEndian.Uint64(v)) > now.UnixNano(), err
	}
	var fresh bool
	err := d.s.Update(ctx, func(tx store.Tx) error {
		for _, k := range [][]byte{k, protocol.LegacyCapabilityDedupeKey(key)} {
			if k == nil {
				continue
			}
			if p, err := present(tx, k); err != nil || p {
				return err
			}
		}
		fresh = true
		expires := now.Add(ttl)
		if err := tx.Put(k, binary.BigEndian.AppendUint64(nil, uint64(expires.UnixNano()))); err != nil {
			return err
		}
		return protocol.ExpireAt(tx, k, expires)
	})
	if err != nil {
		return false, runtime.NewError(runtime.Transient, err)
	}
	return fresh, nil
}

// DiskBlobs is the blob capability on a local directory. Names are
// slash-separated relative paths; writes are atomic (temp file, fsync,
// rename).
type DiskBlobs struct{ dir string }

// NewDiskBlobs returns blobs stored under dir, creating it if needed.
func NewDiskBlobs(dir string) (*DiskBlobs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blob directory: %w", err)
	}
	return &DiskBlobs{dir}, nil
}

func (b *DiskBlobs) path(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", runtime.Errorf(runtime.PolicyDenied, "blob name %q must be a relative path inside the blob store", name)
	}
	return filepath.Join(b.dir, filepath.FromSlash(name)), nil
}

// ReadBlob implements BlobReader.
func (b *DiskBlobs) ReadBlob(ctx context.Context, name string) ([]byte, error) {
	p, err := b.path(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, runtime.Errorf(runtime.Permanent, "blob %q does not exist", name)
	}
	if err != nil {
		return nil, runtime.NewError(runtime.Transient, err)
	}
	return data, nil
}

// WriteBlob implements BlobWriter.
func (b *DiskBlobs) WriteBlob(ctx context.Context, name string, data []byte) error {
	p, err := b.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return runtime.NewError(runtime.Transient, err)
	}
	if err := atomicfile.Write(p, data, 0o644); err != nil {
		return runtime.NewError(runtime.Transient, err)
	}
	return nil
}

// SystemClock is the BestEffort clock capability.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// SystemRNG is the BestEffort rng capability.
type SystemRNG struct{}

// Uint64 implements RNG.
func (SystemRNG) Uint64() uint64 { return rand.Uint64() }

// SeededRNG is the Strict rng capability: the same seed gives the same
// sequence, and each activation draws from the sequence its idempotency
// key selects (runtime.KeyedRNG). Safe for concurrent use.
type SeededRNG struct {
	seed uint64
	mu   sync.Mutex
	r    *rand.Rand
}

// NewSeededRNG returns a generator for seed.
func NewSeededRNG(seed uint64) *SeededRNG {
	return &SeededRNG{seed: seed, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// ForKey returns the generator of the activation whose idempotency key
// is key: the seed mixed with the key's SHA-256.
func (s *SeededRNG) ForKey(key string) runtime.RNG {
	sum := sha256.Sum256([]byte("flowgen/rng.seeded\x00" + key))
	return NewSeededRNG(s.seed ^ binary.LittleEndian.Uint64(sum[:8]))
}

// Uint64 implements RNG.
func (s *SeededRNG) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Uint64()
}

// EnvSecrets resolves secret handles from environment variables: handle
// "stripe/secret-key" is FLOWGEN_SECRET_STRIPE_SECRET_KEY. Values never pass
// through specs, flows or the store.
type EnvSecrets struct {
	// Lookup reads the environment; os.LookupEnv when nil. Programs pass
	// the lookup their main function was given.
	Lookup func(string) (string, bool)
}

// EnvName is the variable that holds a handle's value.
func (EnvSecrets) EnvName(handle string) string {
	up := strings.ToUpper(handle)
	return "FLOWGEN_SECRET_" + strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, up)
}

// Secret implements Secrets.
func (e EnvSecrets) Secret(ctx context.Context, handle string) (string, error) {
	lookup := e.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, ok := lookup(e.EnvName(handle))
	if !ok {
		return "", runtime.Errorf(runtime.Auth, "secret %q is not set (export %s)", handle, e.EnvName(handle))
	}
	return v, nil
}
