package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Retention. What may go away with time says so when it is written: the
// commit that finishes a job, or writes a dedupe record or a cache entry
// with a TTL, also puts an expiry entry
//
//	exp/<ns>/<key>    <key> may be deleted from Unix time ns (20 digits)
//
// so the sweeper finds what is due by reading exp/ in order, from the
// oldest, and stops at the first entry still in the future: its work is
// proportional to what it deletes, never to what the store holds. A record
// rewritten with a later expiry (a dedupe key applied again) gets a later
// entry, and the sweeper, finding the earlier one, leaves the record be.
// The key of a job's entry is its root prefix, pid/<root>/; the job goes
// with everything under it, its index entry, its job key and its lease,
// and the blob of its input when no other job's input is the same.
//
// One process sweeps a store at a time (it holds the lease sweeperJob),
// in commits of at most Options.SweepBatch deletions, each fenced by that
// lease, so a sweep never holds up workers for long and a sweeper that
// stalls past its lease cannot delete after another took over. A job is
// unlinked first (index, key, lease, blob reference, meta: from then on
// it is unknown) and emptied in later commits; its expiry entry goes in
// the last, so a sweep cut short is finished by the next.

// Defaults of the retention options.
const (
	defaultRetention  = 7 * 24 * time.Hour
	defaultSweepEvery = time.Minute
	defaultSweepBatch = 500
)

// sweeperJob names the lease of the store's sweeper; it is no job's root.
var sweeperJob = []byte("flowgen/sweeper")

// retention is how long a finished job of c is kept; not positive: for
// good.
func (e *Engine) retention(c *compiled) time.Duration {
	if c != nil && c.Retention > 0 {
		return c.Retention
	}
	return e.opts.Retention
}

// ackHorizon is how long acknowledged message ids are kept: as long as
// finished jobs, and never less than a minute and two visibility timeouts,
// well past any redelivery that could publish one again. Zero: for good.
func (e *Engine) ackHorizon() time.Duration {
	if e.opts.Retention <= 0 {
		return 0
	}
	return max(e.opts.Retention, time.Minute, 2*e.opts.Visibility)
}

// Sweep deletes, in bounded commits, what retention lets go of by now:
// finished jobs past their flow's retention, dedupe records and cache
// entries past their TTL, stored inputs no job refers to, and acknowledged
// message ids older than the retention. Run calls it every
// Options.SweepEvery; it is safe to call from several processes at once
// (one sweeps, the others report Busy).
func (e *Engine) Sweep(ctx context.Context) (sw runtype.Swept, err error) {
	defer func() { // what committed counts, also when a later commit failed
		for what, n := range map[string]int{"jobs": sw.Jobs, "records": sw.Records, "blobs": sw.Blobs, "acked": sw.Acked} {
			if n > 0 {
				e.metrics.Add(observe.Swept, float64(n), what)
			}
		}
	}()
	lease, err := e.takeSweeperLease(ctx)
	if errors.Is(err, store.ErrLeaseHeld) {
		sw.Busy = true
		return sw, nil
	}
	if err != nil {
		return sw, fmt.Errorf("sweep: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = e.store.Update(ctx, func(tx store.Tx) error { return tx.ReleaseLease(lease) })
	}()
	now := e.now()
	batch := e.opts.SweepBatch
	for {
		if lease, err = e.renewSweeperLease(ctx, lease); err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		due, err := e.dueExpiries(ctx, now, batch)
		if err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		var records [][]byte
		var jobs []dueJob
		for _, k := range due {
			_, target, err := protocol.ParseExpiry(k)
			if err != nil {
				return sw, fmt.Errorf("sweep: %w", err)
			}
			if job, ok := jobOfRoot(target); ok {
				jobs = append(jobs, dueJob{job, k})
				continue
			}
			records = append(records, k)
		}
		if err := e.purgeRecords(ctx, lease, now, records, &sw); err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		if err := e.purgeJobs(ctx, lease, jobs, &sw); err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		if len(due) < batch {
			break
		}
	}
	if h := e.ackHorizon(); h > 0 {
		for _, stream := range []string{runtype.WorkStream, runtype.WorkStream + store.DeadLetterSuffix} {
			for {
				n, err := e.store.PurgeAcked(ctx, stream, now.Add(-h), batch)
				if err != nil {
					return sw, fmt.Errorf("sweep: %w", err)
				}
				sw.Acked += n
				if n == 0 {
					break
				}
			}
		}
	}
	return sw, nil
}

// takeSweeperLease makes this engine the store's sweeper for a while.
func (e *Engine) takeSweeperLease(ctx context.Context) (store.Lease, error) {
	var l store.Lease
	err := e.store.Update(ctx, func(tx store.Tx) error {
		var err error
		l, err = tx.AcquireLease(sweeperJob, e.opts.Owner, e.opts.LeaseTTL)
		return err
	})
	return l, err
}

// renewSweeperLease renews l when it has used up half its time; a sweeper
// that lost it stops (ErrLeaseHeld).
func (e *Engine) renewSweeperLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if e.now().Add(e.opts.LeaseTTL / 2).Before(l.Expires) {
		return l, nil
	}
	return e.takeSweeperLease(ctx)
}

// dueExpiries returns up to max expiry entries due at now, oldest first.
func (e *Engine) dueExpiries(ctx context.Context, now time.Time, max int) ([][]byte, error) {
	var due [][]byte
	bound := protocol.ExpiryKey(now, nil)
	errEnough := errors.New("enough")
	err := e.store.View(ctx, func(tx store.ReadTx) error {
		due = due[:0]
		err := tx.ScanFirst([]byte(protocol.ExpiryPrefix), max, func(k, _ []byte) error {
			// Entries of the same instant as now sort after bound: all
			// of them wait for a later sweep.
			if bytes.Compare(k, bound) >= 0 {
				return errEnough
			}
			due = append(due, bytes.Clone(k))
			return nil
		})
		if errors.Is(err, errEnough) {
			return nil
		}
		return err
	})
	return due, err
}

// jobOfRoot returns the job whose root prefix target is.
func jobOfRoot(target []byte) (runtype.JobID, bool) {
	rest, ok := bytes.CutPrefix(target, protocol.AllRootsPrefix())
	if !ok {
		return runtype.JobID{}, false
	}
	rest, ok = bytes.CutSuffix(rest, []byte("/"))
	if !ok {
		return runtype.JobID{}, false
	}
	j, err := runtype.ParseJobID(string(rest))
	return j, err == nil
}

// purgeRecords deletes the records the expiry entries entries name that
// are still past their expiry at now, and the entries, in one commit.
func (e *Engine) purgeRecords(ctx context.Context, lease store.Lease, now time.Time, entries [][]byte, sw *runtype.Swept) error {
	if len(entries) == 0 {
		return nil
	}
	var n int
	err := e.store.Update(ctx, func(tx store.Tx) error {
		n = 0
		if err := tx.Fence(lease); err != nil {
			return err
		}
		targets := make([][]byte, len(entries))
		for i, k := range entries {
			_, targets[i], _ = protocol.ParseExpiry(k)
		}
		values, _, err := tx.ReadMany(targets, nil)
		if err != nil {
			return err
		}
		for i, k := range entries {
			if values[i] != nil && recordExpires(targets[i], values[i], now) {
				if err := tx.Delete(targets[i]); err != nil {
					return err
				}
				n++
			}
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sw.Records += n
	return e.crash(runtype.CrashSwept)
}

// recordExpires reports whether the record value under key has expired by
// now, as the record itself says: a JSON record's "expires" (a cache entry
// without one lives for good), or the dedupe capability's 8-byte time.
func recordExpires(key, value []byte, now time.Time) bool {
	if len(value) == 8 && value[0] != '{' {
		return int64(binary.BigEndian.Uint64(value)) <= now.UnixNano()
	}
	var rec struct {
		Expires time.Time `json:"expires"`
	}
	if err := json.Unmarshal(value, &rec); err != nil {
		return false // not a record this sweeper knows: keep it
	}
	return !rec.Expires.IsZero() && !rec.Expires.After(now)
}

// dueJob is a finished job whose retention has passed, with its expiry
// entry.
type dueJob struct {
	job   runtype.JobID
	entry []byte
}

// purgeJobs deletes finished jobs, in commits of at most SweepBatch
// deletions: each commit unlinks and empties as many of the jobs as fit,
// in order, deleting a job's expiry entry with its last keys, and the
// next commit goes on where it stopped (a large job takes several).
func (e *Engine) purgeJobs(ctx context.Context, lease store.Lease, jobs []dueJob, sw *runtype.Swept) error {
	for len(jobs) > 0 {
		var finished, blobs, unlinked int
		err := e.store.Update(ctx, func(tx store.Tx) error {
			finished, blobs, unlinked = 0, 0, 0
			if err := tx.Fence(lease); err != nil {
				return err
			}
			budget := e.opts.SweepBatch
			for _, dj := range jobs {
				b, j, err := e.unlinkJob(tx, dj.job)
				if err != nil {
					return fmt.Errorf("job %s: %w", dj.job, err)
				}
				blobs, unlinked = blobs+b, unlinked+j
				n, err := tx.DeletePrefix(protocol.RootPrefix(dj.job), budget)
				if err != nil {
					return fmt.Errorf("job %s: %w", dj.job, err)
				}
				if budget -= n; budget == 0 {
					return nil // perhaps not empty yet: the next commit looks
				}
				if err := tx.Delete(dj.entry); err != nil {
					return err
				}
				finished++
			}
			return nil
		})
		if err != nil {
			return err
		}
		jobs = jobs[finished:]
		sw.Blobs += blobs
		sw.Jobs += unlinked
		if err := e.crash(runtype.CrashSwept); err != nil {
			return err
		}
	}
	return nil
}

// unlinkJob removes what refers to a job from outside its root: its index
// entry, its job key (while it still names the job), its lease and its
// reference to its input's blob (the blob too when that was the last). It
// reads the meta to know them and deletes it, so it does this once; it
// returns the blobs and jobs (0 or 1) it deleted.
func (e *Engine) unlinkJob(tx store.Tx, job runtype.JobID) (blobs, jobs int, err error) {
	var meta struct {
		Key   string          `json:"key,omitempty"`
		Input json.RawMessage `json:"input"`
	}
	found, err := getJSON(tx, protocol.MetaKey(job), &meta)
	if err != nil || !found {
		return 0, 0, err
	}
	if meta.Key != "" {
		var claim startKeyRecord
		ok, err := getJSON(tx, protocol.StartKey(meta.Key), &claim)
		if err != nil {
			return 0, 0, err
		}
		if ok && claim.Job == job.String() {
			if err := tx.Delete(protocol.StartKey(meta.Key)); err != nil {
				return 0, 0, err
			}
		}
	}
	if len(meta.Input) > inlineLimit {
		sum := sha256.Sum256(meta.Input)
		if blobs, err = unreferenceBlob(tx, hex.EncodeToString(sum[:])); err != nil {
			return 0, 0, err
		}
	}
	for _, k := range [][]byte{protocol.JobIndexKey(job), protocol.MetaKey(job)} {
		if err := tx.Delete(k); err != nil {
			return 0, 0, err
		}
	}
	return blobs, 1, tx.DeleteLease(job[:])
}

// referenceBlob counts one more job whose input is the blob ref. It runs
// before the blob is written: on PostgreSQL the count's row lock orders it
// after a sweeper deleting the blob, whose delete it then sees.
func referenceBlob(tx store.Tx, ref string) error {
	return tx.Bump(protocol.BlobKey(ref), 1, maxSemaphore)
}

// unreferenceBlob counts one job less whose input is the blob ref, and
// deletes the blob when none is left; it returns the blobs deleted.
// Blobs stored before they were counted have no count, and stay.
func unreferenceBlob(tx store.Tx, ref string) (int, error) {
	n, err := tx.Counter(protocol.BlobKey(ref))
	if err != nil || n == 0 {
		return 0, err
	}
	if n, err = tx.Add(protocol.BlobKey(ref), -1, maxSemaphore); err != nil || n > 0 {
		return 0, err
	}
	if _, err := tx.DeletePrefix(protocol.BlobKey(ref), 2); err != nil { // its value and its count
		return 0, err
	}
	return 1, nil
}

// reclaimEvery is how often at most the sweeper asks the store to
// make the space it freed reusable.
const reclaimEvery = 30 * time.Second

// runSweeper sweeps every Options.SweepEvery until ctx ends; after a sweep
// that deleted, it lets the store reclaim the space, at most every
// reclaimEvery.
func (e *Engine) runSweeper(ctx context.Context) {
	if e.opts.SweepEvery <= 0 {
		return
	}
	var reclaimed time.Time
	deleted := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.opts.After(e.opts.SweepEvery):
		}
		sw, err := e.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("sweeping; will sweep again", "err", err, "in", e.opts.SweepEvery)
			continue
		}
		if sw.Jobs+sw.Records+sw.Blobs+sw.Acked > 0 {
			e.log.Info("swept", "jobs", sw.Jobs, "records", sw.Records, "blobs", sw.Blobs, "acked", sw.Acked)
			deleted = true
		}
		if deleted && time.Since(reclaimed) >= reclaimEvery {
			if err := e.store.Reclaim(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("reclaiming the space of swept rows; will try again", "err", err)
				continue
			}
			reclaimed, deleted = time.Now(), false
		}
	}
}
