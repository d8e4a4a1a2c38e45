package boltstore

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// committer group-commits Updates without waiting for company: a caller
// that finds no commit running commits at once, alone, so a lone worker
// pays one fsync and no delay; callers that arrive while a commit runs
// queue, and the next commit takes all of them in one transaction and one
// fsync. The batch therefore grows with the number of waiting callers,
// which bbolt's Batch (a fixed size and a timer) cannot do. A function
// that fails is taken out of its batch and run again alone, so it never
// rolls back the others; that is why store.Update's fn may run twice.
type committer struct {
	db *bolt.DB

	mu      sync.Mutex
	running bool   // a leader is committing
	queue   []call // callers waiting for the next commit
}

type call struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// errSolo tells a caller that its function failed inside a batch and must
// run again alone to learn its own outcome.
var errSolo = errors.New("boltstore: run again alone")

// update commits fn, in a group with whatever else is waiting.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	done := make(chan error, 1)
	c.mu.Lock()
	c.queue = append(c.queue, call{fn, done})
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		c.lead()
	}
	if err := <-done; !errors.Is(err, errSolo) {
		return err
	}
	return c.transact(fn)
}

// transact runs fn in a write transaction of its own whose buckets split
// their pages at fillPercent (bbolt keeps the setting per transaction).
func (c *committer) transact(fn func(*bolt.Tx) error) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			tx.Bucket(name).FillPercent = fillPercent
		}
		return fn(tx)
	})
}

// lead commits what is queued; when more queued up meanwhile, another
// goroutine takes over, so the leader returns after its own batch.
func (c *committer) lead() {
	c.mu.Lock()
	batch := c.queue
	c.queue = nil
	c.mu.Unlock()
	c.commit(batch)
	c.mu.Lock()
	more := len(c.queue) > 0
	c.running = more
	c.mu.Unlock()
	if more {
		go c.lead()
	}
}

// commit runs batch in one transaction; a failing call is sent back to
// run alone and the rest commit without it.
func (c *committer) commit(batch []call) {
	for len(batch) > 0 {
		failed := -1
		err := c.transact(func(tx *bolt.Tx) error {
			for i, call := range batch {
				if err := safely(call.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			batch[failed].done <- errSolo
			batch = slices.Delete(batch, failed, failed+1)
			continue
		}
		for _, call := range batch {
			call.done <- err
		}
		return
	}
}

// safely calls fn, turning a panic into an error so that one caller's
// panic does not take the others' commit down; the caller re-runs it alone
// and panics in its own goroutine.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(tx)
}
