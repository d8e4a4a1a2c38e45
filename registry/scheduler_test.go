package registry

import (
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestSchedulerIsFairAcrossNamespaces: workers take the namespace with
// the fewest certifications running, then the one served longest ago,
// then the oldest version; a version held for a retry waits its time; a
// version is never handed to two workers.
func TestSchedulerIsFairAcrossNamespaces(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var waiting []meta.Version
	add := func(ns, version string) {
		waiting = append(waiting, meta.Version{Namespace: ns, Connector: ns + ".c", Version: version, Created: t0.Add(time.Duration(len(waiting)) * time.Minute)})
	}
	for _, v := range []string{"1.0.0", "1.0.1", "1.0.2", "1.0.3"} {
		add("flood", v)
	}
	add("quiet", "1.0.0")
	add("late", "1.0.0")
	q := newScheduler()
	take := func(want string) meta.Key {
		t.Helper()
		k, ok, _ := q.next(waiting, t0)
		if got := k.Namespace + "@" + k.Version; !ok || got != want {
			t.Fatalf("next: %s (%v), want %s", got, ok, want)
		}
		return k
	}
	first := take("flood@1.0.0")
	take("quiet@1.0.0") // flood has one running: another namespace first
	take("late@1.0.0")
	second := take("flood@1.0.1") // all have one running; flood was served longest ago
	q.done(first, time.Time{})
	waiting = waiting[1:] // certified: no longer waiting
	take("flood@1.0.2")   // flood has one running again, the others one each: served longest ago
	q.done(second, t0.Add(time.Minute))
	if k, ok, retry := q.next(waiting[:2], t0); ok || !retry.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a version held for a retry, or one another worker has, was handed out: %s, or its retry time is not told (%s)", k, retry)
	}
	if k, ok, _ := q.next(waiting[:2], t0.Add(time.Minute)); !ok || k != second {
		t.Fatalf("after its retry time: %v %v, want %s", k, ok, second)
	}
}
