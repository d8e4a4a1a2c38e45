package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// jobEnd is a finished job's final status, encoded (endRecord) with what
// step 3 writes with it: the expiry entry that deletes the job after its
// retention, and the parent activation a subflow's job reports to.
type jobEnd struct {
	st     runtype.JobStatus
	raw    []byte
	expiry []byte // nil: kept for good
	parent *parentRef
}

// closingMeta is what step 3 reads of a job's record: decoding the rest
// (the job's input, its budget) would copy what it never uses.
type closingMeta struct {
	Started time.Time  `json:"started"`
	Parent  *parentRef `json:"parent,omitempty"`
}

// decodeClosingMeta decodes closingMeta from job's record.
func decodeClosingMeta(job runtype.JobID, raw []byte) (closingMeta, error) {
	var meta closingMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return meta, fmt.Errorf("job %s: record: %w", job, err)
	}
	return meta, nil
}

// jobStatus is the final status of a job started at started and finished
// at finished, whose activations ended as out says, with rs the results
// of out's terminal activations. haltedAt completes it when a
// compensation ran.
func jobStatus(out outcome, started, finished time.Time, rs []*result, killed bool) runtype.JobStatus {
	st := runtype.JobStatus{State: runtype.StateSucceeded, Result: map[string]json.RawMessage{}, Started: started, Finished: finished,
		Errors: out.errors, Compensated: out.compensated}
	if len(out.errors) > 0 {
		st.State = runtype.StateFailed
	}
	for i, r := range rs {
		if !r.Failed() && r.Output != nil {
			st.Result[out.nodes[i]] = r.Output
		}
	}
	if killed {
		st.State = runtype.StateKilled
	}
	return st
}

// endRecord is a finished job's status as the store keeps it: with its
// place in the job's history, for the status is the finished event
// (finishedEvent). Readers decode it as the status it embeds.
type endRecord struct {
	runtype.JobStatus
	Recorded string `json:"recorded,omitempty"`
}

// encodeEnd encodes st as job's end, to be kept for retention (not
// positive: for good) and reported to parent (nil: none).
func encodeEnd(job runtype.JobID, st runtype.JobStatus, retention time.Duration, parent *parentRef) (jobEnd, error) {
	raw, err := json.Marshal(endRecord{st, nextPlace(st.Finished)})
	if err != nil {
		return jobEnd{}, err
	}
	return jobEnd{st: st, raw: raw, expiry: protocol.JobExpiry(job, st.Finished, retention), parent: parent}, nil
}

// write writes end of job in tx.
func (end jobEnd) write(tx store.Tx, e *protocolWriter, job runtype.JobID) error {
	if err := tx.Put(protocol.StatusKey(job), end.raw); err != nil {
		return err
	}
	if end.expiry != nil {
		if err := tx.Put(end.expiry, []byte("job")); err != nil {
			return err
		}
	}
	return e.reportToParent(tx, job, end.parent, end.raw)
}
