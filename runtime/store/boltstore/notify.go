package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// subscribers are the in-process listeners of each stream: one process
// owns a bbolt file, so every publish is seen by this process's commits.
type subscribers struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]bool
}

// Notify works in process: the channel receives a
// value after each committed Update that published on stream.
func (s *Store) Notify(ctx context.Context, stream string) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	n := &s.listeners
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[string]map[chan struct{}]bool{}
	}
	if n.subs[stream] == nil {
		n.subs[stream] = map[chan struct{}]bool{}
	}
	n.subs[stream][ch] = true
	n.mu.Unlock()
	go func() {
		<-ctx.Done()
		n.mu.Lock()
		delete(n.subs[stream], ch)
		close(ch) // under the lock: no publish sends on it afterwards
		n.mu.Unlock()
	}()
	return ch, nil
}

// publish wakes the listeners of streams; it never blocks.
func (n *subscribers) publish(streams []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, stream := range streams {
		for ch := range n.subs[stream] {
			select {
			case ch <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// published records that the transaction enqueued on stream.
func (t *tx) published(stream string) {
	if !slices.Contains(t.streams, stream) {
		t.streams = append(t.streams, stream)
	}
}

// Ready is a read-only look at the stream's ready
// index, so an idle worker learns there is nothing to reserve without a
// write transaction and its fsync.
func (s *Store) Ready(ctx context.Context, stream string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	ready := false
	err := s.db.View(func(btx *bolt.Tx) error {
		prefix := append([]byte(stream), 0)
		k, _ := btx.Bucket(bucketReady).Cursor().Seek(prefix)
		ready = k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+24 &&
			int64(binary.BigEndian.Uint64(k[len(prefix):])) <= s.now().UnixNano()
		return nil
	})
	return ready, err
}
