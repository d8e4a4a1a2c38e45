package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

var (
	bucketVersions = []byte("versions")
	bucketTokens   = []byte("tokens")    // hash -> token
	bucketTokenIDs = []byte("token-ids") // id -> hash
	bucketAudit    = []byte("audit")     // big-endian seq -> event
	bucketCursors  = []byte("cursors")   // name -> big-endian seq
)

// Bolt is the embedded metadata store: one bbolt file.
type Bolt struct {
	db *bolt.DB
}

// OpenBolt opens (creating) the file at path. A second process opening the
// same file waits up to a second and then fails: bbolt files have one owner.
func OpenBolt(path string) (*Bolt, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("meta: open %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketVersions, bucketTokens, bucketTokenIDs, bucketAudit, bucketCursors} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("meta: %s: %w", path, err)
	}
	return &Bolt{db: db}, nil
}

// Close closes the file.
func (b *Bolt) Close() error { return b.db.Close() }

func versionKey(k Key) []byte {
	return []byte(k.Namespace + "\x00" + k.Connector + "\x00" + k.Version)
}

// CreateVersion implements Store.
func (b *Bolt) CreateVersion(_ context.Context, v Version, audit ...Event) (Version, bool, error) {
	var stored Version
	created := false
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketVersions)
		key := versionKey(v.Key())
		if raw := bk.Get(key); raw != nil {
			if err := json.Unmarshal(raw, &stored); err != nil {
				return err
			}
			if stored.Digest != v.Digest {
				return &ConflictError{Key: v.Key(), Stored: stored.Digest, Offered: v.Digest}
			}
			return nil
		}
		stored, created = v, true
		if err := putJSON(bk, key, v); err != nil {
			return err
		}
		return appendAudits(tx, audit)
	})
	return stored, created, err
}

// GetVersion implements Store.
func (b *Bolt) GetVersion(_ context.Context, k Key) (Version, error) {
	var v Version
	err := b.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketVersions), versionKey(k), k.String(), &v) })
	return v, err
}

// UpdateVersion implements Store.
func (b *Bolt) UpdateVersion(_ context.Context, k Key, fn func(*Version) error, audit ...Event) (Version, error) {
	var v Version
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketVersions)
		if err := getJSON(bk, versionKey(k), k.String(), &v); err != nil {
			return err
		}
		before := v
		if err := fn(&v); err != nil {
			return err
		}
		if err := checkUpdate(before, v); err != nil {
			return err
		}
		if err := putJSON(bk, versionKey(k), v); err != nil {
			return err
		}
		return appendAudits(tx, audit)
	})
	return v, err
}

// ListVersions implements Store.
func (b *Bolt) ListVersions(ctx context.Context, namespace, connector string) ([]Version, error) {
	return b.scan(ctx, []byte(namespace+"\x00"+connector+"\x00"), func(Version) bool { return true })
}

// Search implements Store.
func (b *Bolt) Search(ctx context.Context, q Query) ([]Version, error) {
	var prefix []byte
	if q.Namespace != "" {
		prefix = []byte(q.Namespace + "\x00")
	}
	return b.scan(ctx, prefix, q.Matches)
}

func (b *Bolt) scan(_ context.Context, prefix []byte, keep func(Version) bool) ([]Version, error) {
	var out []Version
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketVersions).Cursor()
		for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
			var v Version
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			if keep(v) {
				out = append(out, v)
			}
		}
		return nil
	})
	sortVersions(out)
	return out, err
}

// CreateToken implements Store.
func (b *Bolt) CreateToken(_ context.Context, t Token, audit ...Event) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		ids, tokens := tx.Bucket(bucketTokenIDs), tx.Bucket(bucketTokens)
		if ids.Get([]byte(t.ID)) != nil || tokens.Get([]byte(t.Hash)) != nil {
			return fmt.Errorf("meta: token %s exists", t.ID)
		}
		if err := ids.Put([]byte(t.ID), []byte(t.Hash)); err != nil {
			return err
		}
		if err := putJSON(tokens, []byte(t.Hash), t); err != nil {
			return err
		}
		return appendAudits(tx, audit)
	})
}

// TokenByHash implements Store.
func (b *Bolt) TokenByHash(_ context.Context, hash string) (Token, error) {
	var t Token
	err := b.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketTokens), []byte(hash), "token", &t) })
	return t, err
}

// RevokeToken implements Store.
func (b *Bolt) RevokeToken(_ context.Context, id string, at time.Time, audit ...Event) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		hash := tx.Bucket(bucketTokenIDs).Get([]byte(id))
		if hash == nil {
			return fmt.Errorf("%w: token %s", ErrNotFound, id)
		}
		tokens := tx.Bucket(bucketTokens)
		var t Token
		if err := getJSON(tokens, hash, "token "+id, &t); err != nil {
			return err
		}
		if t.Revoked.IsZero() {
			t.Revoked = at
		}
		if err := putJSON(tokens, hash, t); err != nil {
			return err
		}
		return appendAudits(tx, audit)
	})
}

// ListTokens implements Store.
func (b *Bolt) ListTokens(_ context.Context) ([]Token, error) {
	var out []Token
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTokens).ForEach(func(_, raw []byte) error {
			var t Token
			if err := json.Unmarshal(raw, &t); err != nil {
				return err
			}
			out = append(out, t)
			return nil
		})
	})
	sortTokens(out)
	return out, err
}

// AppendAudit implements Store.
func (b *Bolt) AppendAudit(_ context.Context, e Event) error {
	return b.db.Update(func(tx *bolt.Tx) error { return appendAudits(tx, []Event{e}) })
}

// appendAudits appends es to the audit log in tx.
func appendAudits(tx *bolt.Tx, es []Event) error {
	bk := tx.Bucket(bucketAudit)
	for _, e := range es {
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		e.Seq = int64(seq)
		if err := putJSON(bk, binary.BigEndian.AppendUint64(nil, seq), e); err != nil {
			return err
		}
	}
	return nil
}

// Audit implements Store.
func (b *Bolt) Audit(_ context.Context, limit int) ([]Event, error) {
	var out []Event
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, raw := c.Last(); k != nil && len(out) < limit; k, raw = c.Prev() {
			var e Event
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// AuditAfter implements Store.
func (b *Bolt) AuditAfter(_ context.Context, seq int64, limit int) ([]Event, error) {
	var out []Event
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, raw := c.Seek(binary.BigEndian.AppendUint64(nil, uint64(seq)+1)); k != nil && len(out) < limit; k, raw = c.Next() {
			var e Event
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// Cursor implements Store.
func (b *Bolt) Cursor(_ context.Context, name string) (int64, error) {
	var seq int64
	err := b.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketCursors).Get([]byte(name)); len(v) == 8 {
			seq = int64(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	return seq, err
}

// SetCursor implements Store.
func (b *Bolt) SetCursor(_ context.Context, name string, seq int64) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCursors).Put([]byte(name), binary.BigEndian.AppendUint64(nil, uint64(seq)))
	})
}

func putJSON(bk *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return bk.Put(key, raw)
}

func getJSON(bk *bolt.Bucket, key []byte, what string, v any) error {
	raw := bk.Get(key)
	if raw == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	return json.Unmarshal(raw, v)
}
