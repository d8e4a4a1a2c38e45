package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// InspectJob reads a job's whole state from s without an engine.
func InspectJob(ctx context.Context, s store.Store, job JobID) (*Inspection, error) {
	in := &Inspection{Job: job.String()}
	prefix := rootPrefix(job)
	err := s.View(ctx, func(tx store.ReadTx) error {
		err := tx.Scan(prefix, func(k, v []byte) error {
			e := InspectionEntry{Key: strings.TrimPrefix(string(k), string(prefix))}
			if json.Valid(v) {
				e.Value = append(json.RawMessage(nil), v...)
			} else {
				e.Text = string(v)
			}
			in.Entries = append(in.Entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.ScanCounters(prefix, func(k []byte, v int64) error {
			key := strings.TrimPrefix(string(k), string(prefix))
			e := InspectionEntry{Key: key, Counter: &v, Words: counterWords(key, v)}
			in.Entries = append(in.Entries, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", job, err)
	}
	if len(in.Entries) == 0 {
		return nil, fmt.Errorf("inspect %s: no such job", job)
	}
	return in, nil
}

func counterWords(key string, v int64) string {
	kind, _, _ := strings.Cut(key, "/")
	switch kind {
	case "act":
		return ledger.Activity(v).Words()
	case "guid":
		return ledger.GUID(v).Words()
	case "sem":
		return fmt.Sprintf("%d open obligations", v)
	case "agg":
		return fmt.Sprintf("%d children finished", v)
	}
	return ""
}
