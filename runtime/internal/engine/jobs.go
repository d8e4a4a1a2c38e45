package engine

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// The job index lists every job newest first without reading job state:
//
//	jobs/<hex of the inverted root id>   flow, start time, parent   value
//
// Root ids are UUIDv7, so inverting their bytes makes ascending key order
// newest first. Jobs created before the index existed are added once, the
// first time a listing runs (protocol.JobIndexBuiltKey marks that).
func jobFromIndexKey(k []byte) (runtype.JobID, bool) {
	var j runtype.JobID
	raw, err := hex.DecodeString(strings.TrimPrefix(string(k), protocol.JobIndexPrefix))
	if err != nil || len(raw) != len(j) {
		return j, false
	}
	for i, b := range raw {
		j[i] = ^b
	}
	return j, true
}

// jobIndexEntry is the value under a job's index key.
type jobIndexEntry struct {
	Flow    string    `json:"flow"`
	Started time.Time `json:"started"`
	Parent  string    `json:"parent,omitempty"`
}

// indexEntry is a job's entry in the job index.
func indexEntry(meta jobMeta) ([]byte, error) {
	e := jobIndexEntry{Flow: meta.Flow, Started: meta.Started}
	if meta.Parent != nil {
		e.Parent = meta.Parent.Job
	}
	return json.Marshal(e)
}

// errPageFull stops the index scan once a page is full.
var errPageFull = errors.New("page full")

// ListJobs lists the jobs in s that match q, newest first. It reads the
// job index and, for each candidate, its status; it needs no registered
// flows, so a command-line tool can list the jobs of any store.
func ListJobs(ctx context.Context, s store.Store, q runtype.JobQuery) (runtype.JobList, error) {
	if err := q.Check(); err != nil {
		return runtype.JobList{}, err
	}
	if err := buildJobIndex(ctx, s); err != nil {
		return runtype.JobList{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	var after []byte
	if q.After != "" {
		j, err := runtype.ParseJobID(q.After)
		if err != nil {
			return runtype.JobList{}, fmt.Errorf("%w: after: %w", runtype.ErrBadQuery, err)
		}
		after = protocol.JobIndexKey(j)
	}
	var list runtype.JobList
	err := s.View(ctx, func(tx store.ReadTx) error {
		list = runtype.JobList{}
		scan := tx.Scan
		if q.Key != "" {
			scan = keyedScan(tx, q.Key)
		}
		err := scan([]byte(protocol.JobIndexPrefix), func(k, v []byte) error {
			if after != nil && bytes.Compare(k, after) <= 0 {
				return nil
			}
			job, ok := jobFromIndexKey(k)
			if !ok {
				return nil
			}
			if len(list.Jobs) == limit {
				list.Next = list.Jobs[limit-1].Job
				return errPageFull
			}
			var ix jobIndexEntry
			if err := json.Unmarshal(v, &ix); err != nil {
				return fmt.Errorf("job index %s: %w", job, err)
			}
			sum, keep, err := matchJob(q, tx, job, ix)
			if err != nil || !keep {
				return err
			}
			list.Jobs = append(list.Jobs, sum)
			return nil
		})
		if errors.Is(err, errPageFull) {
			return nil
		}
		return err
	})
	if err != nil {
		return runtype.JobList{}, fmt.Errorf("list jobs: %w", err)
	}
	return list, nil
}

// keyedScan is a Scan of the job index that visits only the job started
// under key, if any.
func keyedScan(tx store.ReadTx, key string) func([]byte, func(k, v []byte) error) error {
	return func(_ []byte, fn func(k, v []byte) error) error {
		var claim protocol.StartKeyRecord
		raw, err := tx.Get(protocol.StartKey(key))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &claim); err != nil {
			return fmt.Errorf("job key %q: %w", key, err)
		}
		job, err := runtype.ParseJobID(claim.Job)
		if err != nil {
			return fmt.Errorf("job key %q: %w", key, err)
		}
		k := protocol.JobIndexKey(job)
		v, err := tx.Get(k)
		if errors.Is(err, store.ErrNotFound) {
			return nil // claimed by a start that has not committed its job, or swept
		}
		if err != nil {
			return err
		}
		return fn(k, v)
	}
}

// matchJob reads what q needs of a job and reports whether it is kept.
func matchJob(q runtype.JobQuery, tx store.ReadTx, job runtype.JobID, ix jobIndexEntry) (runtype.JobSummary, bool, error) {
	sum := runtype.JobSummary{Job: job.String(), Flow: ix.Flow, Started: ix.Started, Parent: ix.Parent}
	switch {
	case ix.Parent != "" && !q.Subflows,
		q.Flow != "" && q.Flow != ix.Flow,
		!q.Since.IsZero() && ix.Started.Before(q.Since),
		!q.Until.IsZero() && !ix.Started.Before(q.Until):
		return sum, false, nil
	}
	if len(q.Where) > 0 || q.Version != "" {
		raw, err := tx.Get(protocol.MetaKey(job))
		if err != nil {
			return sum, false, err
		}
		var meta jobMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			return sum, false, err
		}
		if (q.Version != "" && meta.Version != q.Version) || !inputMatches(meta.Input, q.Where) {
			return sum, false, nil
		}
	}
	st, found, err := readStatus(tx, job)
	if err == nil && !found {
		err = fmt.Errorf("status of job %s: %w", job, store.ErrNotFound)
	}
	if err != nil {
		return sum, false, err
	}
	sum.State, sum.Finished, sum.Errors = st.State, st.Finished, len(st.Errors)
	if !st.Done() {
		if sum.Paused, err = isPaused(tx, job); err != nil {
			return sum, false, err
		}
		if sum.Waiting, err = waitingCheckpoints(tx, job); err != nil {
			return sum, false, err
		}
	}
	switch q.State {
	case "":
		return sum, true, nil
	case "waiting":
		return sum, len(sum.Waiting) > 0, nil
	case "paused":
		return sum, sum.Paused, nil
	}
	return sum, string(sum.State) == q.State, nil
}

// inputMatches reports whether every dotted path of where names a field
// of input equal to its value.
func inputMatches(input json.RawMessage, where map[string]string) bool {
	var v any
	if json.Unmarshal(input, &v) != nil {
		return false
	}
	for path, want := range where {
		cur := v
		for _, name := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = m[name]; !ok {
				return false
			}
		}
		got, ok := cur.(string)
		if !ok {
			b, _ := json.Marshal(cur)
			got = string(b)
		}
		if got != want {
			return false
		}
	}
	return true
}

// waitingCheckpoints lists the checkpoint nodes of job that wait for a
// decision: parked activations that are not subflow nodes waiting for
// their child job, nor sleeps.
func waitingCheckpoints(tx store.ReadTx, job runtype.JobID) ([]string, error) {
	var nodes []string
	prefix := protocol.JobPrefix(job, "wait")
	err := tx.Scan(prefix, func(k, v []byte) error {
		seg := bytes.TrimPrefix(k, prefix)
		if _, err := tx.Get(protocol.SubflowChildKey(job, string(seg))); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var t task
		if err := cbor.Unmarshal(v, &t); err != nil {
			return err
		}
		if t.Wake != 0 {
			return nil // a sleep waits for its time, not for a decision
		}
		if !slices.Contains(nodes, t.Node) {
			nodes = append(nodes, t.Node)
		}
		return nil
	})
	return nodes, err
}

// WaitingCheckpoints returns the checkpoint nodes of job that wait for a
// decision (flowgen signal), in activation order; none once it finished.
func WaitingCheckpoints(ctx context.Context, s store.Store, job runtype.JobID) ([]string, error) {
	var nodes []string
	err := s.View(ctx, func(tx store.ReadTx) error {
		if _, err := tx.Get(protocol.MetaKey(job)); err != nil {
			return err
		}
		var err error
		nodes, err = waitingCheckpoints(tx, job)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("waiting checkpoints of job %s: %w", job, err)
	}
	return nodes, nil
}

// buildJobIndex indexes, once, the jobs created before the index existed.
func buildJobIndex(ctx context.Context, s store.Store) error {
	done := false
	if err := s.View(ctx, func(tx store.ReadTx) error {
		_, err := tx.Get(protocol.JobIndexBuiltKey())
		done = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil || done {
		return err
	}
	return s.Update(ctx, func(tx store.Tx) error {
		type found struct {
			job  runtype.JobID
			meta jobMeta
		}
		var jobs []found
		err := tx.Scan(protocol.AllRootsPrefix(), func(k, v []byte) error {
			id, rest, ok := strings.Cut(strings.TrimPrefix(string(k), "pid/"), "/")
			if !ok || rest != "meta" {
				return nil
			}
			job, err := runtype.ParseJobID(id)
			if err != nil {
				return nil
			}
			var meta jobMeta
			if err := json.Unmarshal(v, &meta); err != nil {
				return fmt.Errorf("job %s meta: %w", id, err)
			}
			jobs = append(jobs, found{job, meta})
			return nil
		})
		if err != nil {
			return err
		}
		for _, f := range jobs {
			raw, err := indexEntry(f.meta)
			if err != nil {
				return err
			}
			if err := tx.Put(protocol.JobIndexKey(f.job), raw); err != nil {
				return err
			}
		}
		return tx.Put(protocol.JobIndexBuiltKey(), []byte("1"))
	})
}

// Jobs lists the jobs of the engine's store that match q, newest first.
func (e *Engine) Jobs(ctx context.Context, q runtype.JobQuery) (runtype.JobList, error) {
	return ListJobs(ctx, e.store, q)
}

// Waiting returns the checkpoint nodes of job that wait for a decision.
func (e *Engine) Waiting(ctx context.Context, job runtype.JobID) ([]string, error) {
	return WaitingCheckpoints(ctx, e.store, job)
}
