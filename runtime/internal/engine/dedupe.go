package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Exactly-once edges record each applied effect in the dedupe store, keyed
// by the target's idempotency key, in the same commit as the activation's
// result:
//
//	dedupe/edge/<key>    {expires, output}    value, outside any job root
//
// so a second job carrying the same business key within the TTL reuses the
// output instead of applying the effect again.

// defaultDedupeTTL applies when an exactly-once edge names no TTL.
const defaultDedupeTTL = 24 * time.Hour

type dedupeRecord struct {
	Expires time.Time       `json:"expires"`
	Output  json.RawMessage `json:"output"`
	Job     string          `json:"job"`
}

// deduped returns the recorded result when the activation's key was
// applied within its TTL.
func (p *processor) deduped(ctx context.Context, info runtype.NodeInfo, t task) (result, bool, error) {
	key, err := activationKey(info, t)
	if err != nil || key == "" {
		return result{}, false, nil // the call reports the key problem
	}
	var rec dedupeRecord
	found, err := lookupJSON(ctx, p.view, protocol.EdgeDedupeKey(key), &rec)
	if err != nil {
		return result{}, false, fmt.Errorf("dedupe store: %w", err)
	}
	if !found {
		return result{}, false, nil
	}
	if !rec.Expires.After(p.now()) {
		return result{}, false, nil
	}
	return result{Output: rec.Output, Port: "out", Attempts: 0, Deduplicated: rec.Job}, true, nil
}

// recordDedupe writes the dedupe record of an exactly-once activation in
// the step 1 commit.
func (pw *protocolWriter) recordDedupe(tx store.Tx, c *compiled, en *entry, res *result) error {
	t := en.t
	if t.Delivery != flowtype.ExactlyOnce || res.Failed() || res.Deduplicated != "" || t.Kind == protocol.Undo {
		return nil
	}
	n := c.byAlias[t.Node]
	if n == nil || n.Task == nil {
		return nil
	}
	key, err := activationKey(n.Task.Info(), t)
	if err != nil || key == "" {
		return err
	}
	ttl := t.DedupeTTL
	if ttl <= 0 {
		ttl = defaultDedupeTTL
	}
	rec := dedupeRecord{Expires: pw.now().Add(ttl), Output: res.Output, Job: en.job.String()}
	if err := protocol.PutJSON(tx, protocol.EdgeDedupeKey(key), rec); err != nil {
		return err
	}
	return protocol.ExpireAt(tx, protocol.EdgeDedupeKey(key), rec.Expires)
}
