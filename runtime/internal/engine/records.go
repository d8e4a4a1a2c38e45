package engine

import (
	"context"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// lookupJSON is getJSON in a read transaction of its own.
func lookupJSON(ctx context.Context, s viewer, key []byte, v any) (found bool, err error) {
	err = s.View(ctx, func(tx store.ReadTx) error {
		found, err = protocol.GetJSON(tx, key, v)
		return err
	})
	return found, err
}

// readStatus reads job's status: its final status once it has ended,
// and while it runs a running status from its record (a start writes no
// status of its own; jobs started before a start stopped writing one
// have a running status stored). found is false for a job the store does
// not hold.
func readStatus(tx store.ReadTx, job runtype.JobID) (st runtype.JobStatus, found bool, err error) {
	if found, err = protocol.GetJSON(tx, protocol.StatusKey(job), &st); err != nil || found {
		return st, found, err
	}
	var meta closingMeta
	if found, err = protocol.GetJSON(tx, protocol.MetaKey(job), &meta); err != nil || !found {
		return st, found, err
	}
	return runningSince(meta.Started), true, nil
}

// runningSince is the status of a running job started at started, which
// no record holds (see readStatus).
func runningSince(started time.Time) runtype.JobStatus {
	return runtype.JobStatus{State: runtype.StateRunning, Started: started}
}
