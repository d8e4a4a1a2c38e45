// Package crashpoint enumerates crash points, the one way flowgen proves
// recovery: run a scenario once to count how often each point is reached,
// then once for every occurrence of every point, crashing there, and let
// the scenario recover and check what survived. testharness.CrashPoints
// (for connector authors) and the runtime's own crash tests are both
// scenarios of this one driver. It imports nothing of flowgen, so the
// runtime's in-package tests can use it.
package crashpoint

import (
	"errors"
	"fmt"
	"testing"
)

// ErrCrash is what the crash hook returns at the chosen occurrence; the
// engine returns it from the step that hit the point, as if the process
// had died there.
var ErrCrash = errors.New("injected crash")

// Scenario is one crash-point test.
type Scenario struct {
	// Points lists the crash points in protocol order (engine.CrashPoints).
	Points []string
	// Start makes a fresh world, starts the job with hook as the engine's
	// crash hook and runs it until it finishes or hook crashes it. It
	// returns a function that throws the crashed process away (only the
	// store survives), lets a new worker finish the job and checks the
	// outcome, and the run's error.
	Start func(t *testing.T, hook func(point string) error) (recoverAndCheck func(), err error)
}

// Enumerate runs s once with a counting hook, fails if any point was
// never reached, then runs one subtest per occurrence of every point,
// named "point#n", in which the run crashes at that occurrence and
// recovers. It returns the number of crash cases.
func Enumerate(t *testing.T, s Scenario) int {
	t.Helper()
	hits := map[string]int{}
	if _, err := s.Start(t, func(p string) error { hits[p]++; return nil }); err != nil {
		t.Fatalf("the run without a crash failed: %v", err)
	}
	cases := 0
	for _, point := range s.Points {
		if hits[point] == 0 {
			t.Fatalf("crash point %s is never reached", point)
		}
		for occurrence := 1; occurrence <= hits[point]; occurrence++ {
			cases++
			t.Run(fmt.Sprintf("%s#%d", point, occurrence), func(t *testing.T) {
				seen := 0
				recoverAndCheck, err := s.Start(t, func(p string) error {
					if p == point {
						if seen++; seen == occurrence {
							return ErrCrash
						}
					}
					return nil
				})
				if !errors.Is(err, ErrCrash) {
					t.Fatalf("the run did not crash at %s#%d: %v", point, occurrence, err)
				}
				recoverAndCheck()
			})
		}
	}
	t.Logf("%d crash cases over %d crash points", cases, len(s.Points))
	return cases
}
