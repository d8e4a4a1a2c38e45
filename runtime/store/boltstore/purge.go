package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// The done bucket holds an acknowledged message's id with the time of its
// acknowledgement (8 bytes, Unix nanoseconds, big-endian; nil in files
// written before acknowledgements were timed, which count as acknowledged
// long ago). It is ordered by stream and id, not by time, so PurgeAcked
// walks it a slice at a time: each call reads at most purgeVisits markers
// in a read transaction, which holds up no writer, from where the last
// call stopped (wrapping at the stream's end), and deletes what it found
// in one short write transaction.

// purgeVisits bounds the markers one PurgeAcked call reads, per marker it
// may delete.
const purgeVisits = 8

// ackedAt encodes an acknowledgement time for the done bucket.
func ackedAt(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

// ackedBefore reports whether a done marker's acknowledgement came before t.
func ackedBefore(v []byte, t time.Time) bool {
	return len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < t.UnixNano()
}

// PurgeAcked implements store.Store.
func (s *Store) PurgeAcked(ctx context.Context, stream string, before time.Time, max int) (int, error) {
	if err := ctx.Err(); err != nil || max <= 0 {
		return 0, err
	}
	s.purge.Lock()
	defer s.purge.Unlock()
	prefix := append([]byte(stream), 0)
	var doomed [][]byte
	err := s.db.View(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketDone).Cursor()
		budget := max * purgeVisits
		// From the cursor to the stream's end, then from its start to
		// the cursor.
		from := s.purge.from[stream]
		spans := [][2][]byte{{from, nil}, {nil, from}}
		if from == nil {
			spans = spans[:1]
		}
		for _, span := range spans {
			start := prefix
			if span[0] != nil {
				start = span[0]
			}
			k, v := c.Seek(start)
			for ; k != nil && bytes.HasPrefix(k, prefix) && (span[1] == nil || bytes.Compare(k, span[1]) < 0); k, v = c.Next() {
				if budget == 0 || len(doomed) == max {
					s.purge.remember(stream, bytes.Clone(k))
					return nil
				}
				budget--
				if len(k) == len(prefix)+16 && ackedBefore(v, before) {
					doomed = append(doomed, bytes.Clone(k))
				}
			}
			s.purge.remember(stream, nil) // the next call starts over
		}
		return nil
	})
	if err != nil || len(doomed) == 0 {
		return 0, err
	}
	err = s.commit.update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketDone)
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(doomed), nil
}

// purgeCursor is where the next PurgeAcked of each stream resumes; the
// mutex makes calls take turns.
type purgeCursor struct {
	sync.Mutex
	from map[string][]byte
}

func (p *purgeCursor) remember(stream string, next []byte) {
	if p.from == nil {
		p.from = map[string][]byte{}
	}
	p.from[stream] = next
}

func (t *tx) DeletePrefix(prefix []byte, max int) (int, error) {
	// The counters this transaction changed are written first, so the
	// buckets hold everything to delete.
	if err := t.flushCounters(); err != nil {
		return 0, err
	}
	n := 0
	for _, name := range [][]byte{bucketKV, bucketCounters} {
		b := t.b(name)
		var doomed [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n+len(doomed) < max; k, _ = c.Next() {
			doomed = append(doomed, bytes.Clone(k))
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return n, err
			}
		}
		n += len(doomed)
	}
	return n, nil
}

// Backlog implements store.Store from the ready index, in one read
// transaction: its keys hold each pending message's visibility time, in
// order.
func (s *Store) Backlog(ctx context.Context, stream string) (store.Backlog, error) {
	b := store.Backlog{Now: s.now()}
	if err := ctx.Err(); err != nil {
		return b, err
	}
	prefix := append([]byte(stream), 0)
	err := s.db.View(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketReady).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(k) != len(prefix)+24 {
				continue // a longer stream name sharing the prefix
			}
			b.Pending++
			at := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			if at <= b.Now.UnixNano() {
				if b.Ready == 0 {
					b.OldestReady = time.Unix(0, at)
				}
				b.Ready++
			}
		}
		return nil
	})
	return b, err
}
