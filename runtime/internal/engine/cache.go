package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/idemkey"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A connector that declares a cache (Strict, or Stable with its pins in
// the key) has its successful outputs memoised in the store under
// cache/<key>, the canonical key of the connector id and version and its
// cache fields: any activation of any job with the same fields reuses the
// output instead of calling the node, until the entry's TTL passes. The
// entry is written in the steps commit of the activation that called the
// node, with its result.

// cacheRecord is stored at cache/<key>.
type cacheRecord struct {
	Output json.RawMessage `json:"output"`
	// Expires is zero for an entry that lives for good.
	Expires time.Time `json:"expires,omitzero"`
	Job     string    `json:"job"`
}

// cacheKey is the cache key of an activation of info's connector with
// input; empty when the connector declares no cache.
func cacheKey(info runtype.NodeInfo, input json.RawMessage) (string, error) {
	if len(info.Cache.Key) == 0 {
		return "", nil
	}
	all, err := idemkey.ParseFields(input)
	if err != nil {
		return "", fmt.Errorf("cache key of %s: %w", info.ID, err)
	}
	fields := make(map[string]any, len(info.Cache.Key))
	for _, f := range info.Cache.Key {
		v, ok := fieldAt(all, f)
		if !ok {
			return "", fmt.Errorf("cache key of %s: input has no field %q", info.ID, f)
		}
		fields[f] = v
	}
	k, err := idemkey.Compute(idemkey.Input{Schema: "cache:" + info.ID + "@" + info.Version, Node: info.ID, Fields: fields})
	if err != nil {
		return "", fmt.Errorf("cache key of %s: %w", info.ID, err)
	}
	return k.String(), nil
}

// cached returns the memoised output of an activation, if a live entry
// holds one.
func (p *processor) cached(ctx context.Context, info runtype.NodeInfo, t task) (result, bool, error) {
	key, err := cacheKey(info, t.Input)
	if err != nil || key == "" {
		return result{}, false, nil // the call reports the input's problem
	}
	var rec cacheRecord
	err = p.store.View(ctx, func(tx store.ReadTx) error {
		raw, err := tx.Get(cacheEntryKey(key))
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &rec)
	})
	if errors.Is(err, store.ErrNotFound) {
		return result{}, false, nil
	}
	if err != nil {
		return result{}, false, fmt.Errorf("cache: %w", err)
	}
	if !rec.Expires.IsZero() && !rec.Expires.After(p.now()) {
		return result{}, false, nil
	}
	return result{Output: rec.Output, Port: "out", Attempts: 0, Cached: rec.Job}, true, nil
}

// recordCache memoises a successful output of a cached connector in the
// step 1 commit.
func (e *Engine) recordCache(tx store.Tx, c *compiled, en *entry, res *result) error {
	t := en.t
	if res.failed() || res.Cached != "" || res.Deduplicated != "" || t.Kind == runtype.Undo {
		return nil
	}
	n := c.byAlias[t.Node]
	if n == nil || n.Task == nil {
		return nil
	}
	info := n.Task.Info()
	key, err := cacheKey(info, t.Input)
	if err != nil || key == "" {
		return err
	}
	rec := cacheRecord{Output: res.Output, Job: en.job.String()}
	if info.Cache.TTL > 0 {
		rec.Expires = e.now().Add(info.Cache.TTL)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Put(cacheEntryKey(key), raw)
}
