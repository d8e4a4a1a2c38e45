package ledger

import (
	"errors"
	"testing"
)

// deltaOf returns a function that unwraps an increment, failing the test
// on error: a += Activity(delta(a.Leg2EntryDelta())).
func deltaOf(t *testing.T) func(int64, error) int64 {
	return func(d int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

func wantString(t *testing.T, got interface{ String() string }, want string) {
	t.Helper()
	if got.String() != want {
		t.Fatalf("ledger = %s, want %s", got, want)
	}
}

// TestLeg2EntryAndStepResume follows one message through leg 2: the entry
// seeds the GUID ordinal, step 1 touches only the GUID, a crash before step
// 2 resumes at step 2.
func TestLeg2EntryAndStepResume(t *testing.T) {
	delta := deltaOf(t)
	var a Activity
	wantString(t, a, "000000000000000")
	a += Activity(delta(a.Leg2EntryDelta()))
	wantString(t, a, "000000000000001")
	g, err := NewGUID(a.Leg2Entries())
	if err != nil {
		t.Fatal(err)
	}
	wantString(t, g, "000000000000001")
	g += GUID(delta(g.StepDelta(1)))
	wantString(t, g, "000010000000001")
	wantString(t, a, "000000000000001") // step 1 leaves the activity alone
	// Crash. The redelivered message reads the GUID: step 1 is skipped.
	if !g.WorkDone() || g.ChildrenSpawned() {
		t.Fatalf("resume state: %s", g.Words())
	}
	if _, err := g.StepDelta(1); !errors.Is(err, ErrAlreadySet) {
		t.Fatalf("step 1 again: %v", err)
	}
	g += GUID(delta(g.StepDelta(2)))
	wantString(t, g, "000011000000001")
	if g.NeedsCompletion() {
		t.Fatal("step 3 due although the job did not close")
	}
}

// TestSemaphoreDeltas checks the spawn-aware rule for 0, 1, 2 and 3
// children and a job that closes when the last obligation ends.
func TestSemaphoreDeltas(t *testing.T) {
	for children, want := range map[int]int64{0: -1, 1: 0, 2: 1, 3: 2} {
		if got := SemaphoreDelta(children); got != want {
			t.Errorf("SemaphoreDelta(%d) = %d, want %d", children, got, want)
		}
	}
	sem := int64(5)
	sem += SemaphoreDelta(2)
	if sem != 6 {
		t.Fatalf("5 + delta(2) = %d", sem)
	}
}

// TestJobClosureSurvivesCrashBeforeStep3 follows the message whose step 2
// brings the semaphore to zero: the compound primitive sets the job-closed
// snapshot with the step 2 marker, the process crashes, and the replay runs
// step 3 exactly once, finalizing the activity.
func TestJobClosureSurvivesCrashBeforeStep3(t *testing.T) {
	delta := deltaOf(t)
	a := Activity(1_100_000_000_001)
	g := GUID(10_000_000_001) // step 1 done
	sem := int64(1)
	// Step 2 (compound): delta, threshold check, snapshot, marker in one commit.
	sem += SemaphoreDelta(0)
	g += GUID(delta(g.StepDelta(2)))
	if sem == 0 {
		g += GUID(JobClosed)
	}
	wantString(t, g, "000111000000001")
	// Crash before step 3. The replay sees the semaphore already at zero,
	// but only the snapshot says this message owns the completion.
	if !g.NeedsCompletion() {
		t.Fatal("snapshot lost: step 3 would never run")
	}
	g += GUID(delta(g.StepDelta(3)))
	a += Activity(delta(a.FinalizeDelta()))
	wantString(t, g, "000111100000001")
	wantString(t, a, "201100000000001")
	if g.NeedsCompletion() || !a.Finalized() {
		t.Fatalf("after step 3: %s / %s", g.Words(), a.Words())
	}
	// A second replay finds everything marked and only acknowledges.
	if _, err := g.StepDelta(3); !errors.Is(err, ErrAlreadySet) {
		t.Fatalf("step 3 twice: %v", err)
	}
	if _, err := a.FinalizeDelta(); !errors.Is(err, ErrAlreadySet) {
		t.Fatalf("finalize twice: %v", err)
	}
	if g.Words() != "ordinal=1, work done, children published, closed the job, completion done" {
		t.Errorf("words: %s", g.Words())
	}
	if a.Words() != "leg2 entries=1, finalized" {
		t.Errorf("words: %s", a.Words())
	}
}

// TestCeilingsAreEnforcedNotWrapped drives each counter to its ceiling.
func TestCeilingsAreEnforcedNotWrapped(t *testing.T) {
	a := Activity(MaxLeg2)
	if _, err := a.Leg2EntryDelta(); !errors.Is(err, ErrOverflow) {
		t.Errorf("leg 2 entry past 99,999,999: %v", err)
	}
	if a.DimensionalIndex() != MaxLeg2-1 {
		t.Errorf("dimensional index %d", a.DimensionalIndex())
	}
	if _, err := NewGUID(MaxOrdinal + 1); !errors.Is(err, ErrOverflow) {
		t.Errorf("ordinal past ceiling: %v", err)
	}
	// The largest legal activity value still fits 15 digits.
	top := Activity(Finalize + MaxLeg2)
	if top.String() != "200000099999999" || int64(top) > MaxValue || !top.Finalized() {
		t.Errorf("top = %s", top)
	}
}
