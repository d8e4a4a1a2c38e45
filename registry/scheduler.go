package registry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/registry/meta"
)

// Certification scheduling. CertifyWorkers workers certify at once. Each
// takes the next version from the namespace with the fewest
// certifications running, and among those the one served longest ago,
// oldest version first: one namespace's queue delays another's by at
// most one certification, however long it is (and a certification lasts
// at most CertifyTimeout).

// scheduler hands waiting versions to workers fairly across namespaces.
type scheduler struct {
	mu      sync.Mutex
	running map[string]int // namespace → certifications running
	served  map[string]uint64
	turn    uint64
	taken   map[meta.Key]bool
	// retryAt holds versions whose certification failed for a reason
	// worth retrying (storage) until they may be tried again.
	retryAt map[meta.Key]time.Time
}

func newScheduler() *scheduler {
	return &scheduler{running: map[string]int{}, served: map[string]uint64{}, taken: map[meta.Key]bool{}, retryAt: map[meta.Key]time.Time{}}
}

// next picks a version among waiting (any order) for a worker, or
// reports none and when a version held for a retry may next be tried
// (zero for none); the worker calls done when it is finished with it.
func (q *scheduler) next(waiting []meta.Version, now time.Time) (k meta.Key, ok bool, retry time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var best *meta.Version
	for i := range waiting {
		v := &waiting[i]
		k := v.Key()
		if at := q.retryAt[k]; !q.taken[k] && now.Before(at) && (retry.IsZero() || at.Before(retry)) {
			retry = at
		}
		if q.taken[k] || now.Before(q.retryAt[k]) {
			continue
		}
		if best == nil || q.before(v, best) {
			best = v
		}
	}
	if best == nil {
		return meta.Key{}, false, retry
	}
	k = best.Key()
	q.taken[k] = true
	q.running[k.Namespace]++
	q.turn++
	q.served[k.Namespace] = q.turn
	return k, true, time.Time{}
}

// before orders candidates: fewer running in the namespace, then the
// namespace served longest ago, then the oldest version.
func (q *scheduler) before(a, b *meta.Version) bool {
	if ra, rb := q.running[a.Namespace], q.running[b.Namespace]; ra != rb {
		return ra < rb
	}
	if sa, sb := q.served[a.Namespace], q.served[b.Namespace]; sa != sb {
		return sa < sb
	}
	return a.Created.Before(b.Created)
}

// done returns a worker's version; retryAfter, when not zero, holds it
// back until then.
func (q *scheduler) done(k meta.Key, retryAt time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.taken, k)
	if q.running[k.Namespace]--; q.running[k.Namespace] <= 0 {
		delete(q.running, k.Namespace)
	}
	if retryAt.IsZero() {
		delete(q.retryAt, k)
	} else {
		q.retryAt[k] = retryAt
	}
}

// RunCertifier certifies uploaded versions with Config.CertifyWorkers
// workers until ctx is done. It starts with every version a previous run
// left pending or certifying, so a registry stopped mid-certification
// finishes the job when it starts again. A storage error leaves the
// version where it was, to be tried again after Config.RetryInterval.
func (s *Server) RunCertifier(ctx context.Context) error {
	var wg sync.WaitGroup
	for range s.cfg.CertifyWorkers {
		wg.Go(func() { s.certifyLoop(ctx) })
	}
	wg.Wait()
	return nil
}

// certifyLoop is one worker: it certifies the version the scheduler gives
// it, and when there is none, waits for a publish, a retry or the end.
func (s *Server) certifyLoop(ctx context.Context) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for ctx.Err() == nil {
		waiting, err := s.meta.Search(ctx, meta.Query{States: []meta.State{meta.Pending, meta.Certifying}})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("certifier: listing waiting versions", slog.Any("error", err))
			}
			retry.Reset(s.cfg.RetryInterval)
		} else {
			s.metrics.queue.Set(float64(len(waiting)))
			k, ok, retryAt := s.sched.next(waiting, time.Now())
			if ok {
				s.Wake() // another idle worker may take the next one
				var again time.Time
				if err := s.certify(ctx, k); err != nil && ctx.Err() == nil {
					s.log.Error("certifier: will retry", slog.String("version", k.String()), slog.Any("error", err))
					again = time.Now().Add(s.cfg.RetryInterval)
				}
				s.sched.done(k, again)
				if !again.IsZero() {
					s.Wake() // an idle worker arms its timer for it
				}
				continue
			}
			if !retryAt.IsZero() {
				retry.Reset(time.Until(retryAt))
			}
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-retry.C:
		}
	}
}
