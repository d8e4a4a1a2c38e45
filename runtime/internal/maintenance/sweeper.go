// Package maintenance is what runs beside the step protocol, on the same
// store, without being a step: the retention sweeper deletes what its
// time let go of, schedules start the jobs of cron ticks, and operators
// requeue or fail dead letters. It writes through the protocol's keys and
// never reaches the engine; what it needs of it (starting a job) it is
// given as an interface.
package maintenance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
// in commits of at most Batch deletions, each fenced by that
// lease, so a sweep never holds up workers for long and a sweeper that
// stalls past its lease cannot delete after another took over. A job is
// unlinked first (index, key, lease, blob reference, meta: from then on
// it is unknown) and emptied in later commits; its expiry entry goes in
// the last, so a sweep cut short is finished by the next.

// Sweeper sweeps one store. Its fields are set once, before its first
// Sweep; an engine makes one from its options.
type Sweeper struct {
	// Store is what it sweeps.
	Store store.Store
	// Owner names this sweeper's lease holder.
	Owner string
	// LeaseTTL is how long its lease lasts; it renews it at half.
	LeaseTTL time.Duration
	// Retention is the workers' retention, which bounds how long
	// acknowledged message ids are kept (not positive: for good).
	Retention time.Duration
	// Visibility is the workers' visibility timeout.
	Visibility time.Duration
	// Batch bounds the deletions of one commit.
	Batch int
	// Every is how often Run sweeps (not positive: Run does nothing).
	Every time.Duration
	// Now and After are the clock.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Crash is called at runtype.CrashSwept after each commit; an error
	// stops the sweep there (crash tests).
	Crash func(point string) error
	// Log receives what Run did and why it will try again.
	Log *slog.Logger
	// Metrics counts what committed sweeps deleted.
	Metrics observe.Metrics
}

// sweeperJob names the lease of the store's sweeper; it is no job's root.
var sweeperJob = []byte("flowgen/sweeper")

// ackHorizon is how long acknowledged message ids are kept: as long as
// finished jobs, and never less than a minute and two visibility timeouts,
// well past any redelivery that could publish one again. Zero: for good.
func (s *Sweeper) ackHorizon() time.Duration {
	if s.Retention <= 0 {
		return 0
	}
	return max(s.Retention, time.Minute, 2*s.Visibility)
}

// Sweep deletes, in bounded commits, what retention lets go of by now:
// finished jobs past their flow's retention, dedupe records and cache
// entries past their TTL, stored inputs no job refers to, and acknowledged
// message ids older than the retention. Run calls it every
// Every; it is safe to call from several processes at once
// (one sweeps, the others report Busy).
func (s *Sweeper) Sweep(ctx context.Context) (sw runtype.Swept, err error) {
	defer func() { // what committed counts, also when a later commit failed
		for what, n := range map[string]int{"jobs": sw.Jobs, "records": sw.Records, "blobs": sw.Blobs, "acked": sw.Acked} {
			if n > 0 {
				s.Metrics.Add(observe.Swept, float64(n), what)
			}
		}
	}()
	lease, err := s.takeSweeperLease(ctx)
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
		_ = s.Store.Update(ctx, func(tx store.Tx) error { return tx.ReleaseLease(lease) })
	}()
	now := s.Now()
	batch := s.Batch
	for {
		if lease, err = s.renewSweeperLease(ctx, lease); err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		due, err := s.dueExpiries(ctx, now, batch)
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
		if err := s.purgeRecords(ctx, lease, now, records, &sw); err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		if err := s.purgeJobs(ctx, lease, jobs, &sw); err != nil {
			return sw, fmt.Errorf("sweep: %w", err)
		}
		if len(due) < batch {
			break
		}
	}
	if h := s.ackHorizon(); h > 0 {
		for _, stream := range []string{runtype.WorkStream, protocol.DeadStream} {
			for {
				n, err := s.Store.PurgeAcked(ctx, stream, now.Add(-h), batch)
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
func (s *Sweeper) takeSweeperLease(ctx context.Context) (store.Lease, error) {
	var l store.Lease
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		l, err = tx.AcquireLease(sweeperJob, s.Owner, s.LeaseTTL)
		return err
	})
	return l, err
}

// renewSweeperLease renews l when it has used up half its time; a sweeper
// that lost it stops (ErrLeaseHeld).
func (s *Sweeper) renewSweeperLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if s.Now().Add(s.LeaseTTL / 2).Before(l.Expires) {
		return l, nil
	}
	return s.takeSweeperLease(ctx)
}

// dueExpiries returns up to max expiry entries due at now, oldest first.
func (s *Sweeper) dueExpiries(ctx context.Context, now time.Time, max int) ([][]byte, error) {
	var due [][]byte
	bound := protocol.ExpiryKey(now, nil)
	errEnough := errors.New("enough")
	err := s.Store.View(ctx, func(tx store.ReadTx) error {
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
func (s *Sweeper) purgeRecords(ctx context.Context, lease store.Lease, now time.Time, entries [][]byte, sw *runtype.Swept) error {
	if len(entries) == 0 {
		return nil
	}
	var n int
	err := s.Store.Update(ctx, func(tx store.Tx) error {
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
	return s.Crash(runtype.CrashSwept)
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
func (s *Sweeper) purgeJobs(ctx context.Context, lease store.Lease, jobs []dueJob, sw *runtype.Swept) error {
	for len(jobs) > 0 {
		var finished, blobs, unlinked int
		err := s.Store.Update(ctx, func(tx store.Tx) error {
			finished, blobs, unlinked = 0, 0, 0
			if err := tx.Fence(lease); err != nil {
				return err
			}
			budget := s.Batch
			for _, dj := range jobs {
				b, j, err := s.unlinkJob(tx, dj.job)
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
		if err := s.Crash(runtype.CrashSwept); err != nil {
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
func (s *Sweeper) unlinkJob(tx store.Tx, job runtype.JobID) (blobs, jobs int, err error) {
	var meta struct {
		Key   string          `json:"key,omitempty"`
		Input json.RawMessage `json:"input"`
	}
	found, err := protocol.GetJSON(tx, protocol.MetaKey(job), &meta)
	if err != nil || !found {
		return 0, 0, err
	}
	if meta.Key != "" {
		var claim protocol.StartKeyRecord
		ok, err := protocol.GetJSON(tx, protocol.StartKey(meta.Key), &claim)
		if err != nil {
			return 0, 0, err
		}
		if ok && claim.Job == job.String() {
			if err := tx.Delete(protocol.StartKey(meta.Key)); err != nil {
				return 0, 0, err
			}
		}
	}
	if len(meta.Input) > protocol.InlineLimit {
		sum := sha256.Sum256(meta.Input)
		if blobs, err = protocol.UnreferenceBlob(tx, hex.EncodeToString(sum[:])); err != nil {
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

// reclaimEvery is how often at most the sweeper asks the store to
// make the space it freed reusable.
const reclaimEvery = 30 * time.Second

// Run sweeps every Every until ctx ends; after a sweep
// that deleted, it lets the store reclaim the space, at most every
// reclaimEvery.
func (s *Sweeper) Run(ctx context.Context) {
	if s.Every <= 0 {
		return
	}
	var reclaimed time.Time
	deleted := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.After(s.Every):
		}
		sw, err := s.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("sweeping; will sweep again", "err", err, "in", s.Every)
			continue
		}
		if sw.Jobs+sw.Records+sw.Blobs+sw.Acked > 0 {
			s.Log.Info("swept", "jobs", sw.Jobs, "records", sw.Records, "blobs", sw.Blobs, "acked", sw.Acked)
			deleted = true
		}
		if deleted && time.Since(reclaimed) >= reclaimEvery {
			if err := s.Store.Reclaim(ctx); err != nil && ctx.Err() == nil {
				s.Log.Warn("reclaiming the space of swept rows; will try again", "err", err)
				continue
			}
			reclaimed, deleted = time.Now(), false
		}
	}
}
