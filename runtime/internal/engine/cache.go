package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
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
	k, err := canonicalKey("cache:"+info.ID+"@"+info.Version, info.ID, info.Cache.Key, input)
	if err != nil {
		return "", fmt.Errorf("cache key of %s: %w", info.ID, err)
	}
	return k, nil
}

// cached returns the memoised output of an activation, if a live entry
// holds one.
func (p *processor) cached(ctx context.Context, info runtype.NodeInfo, t task) (result, bool, error) {
	key, err := cacheKey(info, t.Input)
	if err != nil || key == "" {
		return result{}, false, nil // the call reports the input's problem
	}
	var rec cacheRecord
	found, err := lookupJSON(ctx, p.view, protocol.CacheEntryKey(key), &rec)
	if err != nil {
		return result{}, false, fmt.Errorf("cache: %w", err)
	}
	if !found {
		return result{}, false, nil
	}
	if !rec.Expires.IsZero() && !rec.Expires.After(p.now()) {
		return result{}, false, nil
	}
	return result{Output: rec.Output, Port: "out", Attempts: 0, Cached: rec.Job}, true, nil
}

// recordCache memoises a successful output of a cached connector in the
// step 1 commit.
func (pw *protocolWriter) recordCache(tx store.Tx, c *compiled, en *entry, res *result) error {
	t := en.t
	if res.Failed() || res.Cached != "" || res.Deduplicated != "" || t.Kind == protocol.Undo {
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
		rec.Expires = pw.now().Add(info.Cache.TTL)
	}
	if err := protocol.PutJSON(tx, protocol.CacheEntryKey(key), rec); err != nil || rec.Expires.IsZero() {
		return err
	}
	return protocol.ExpireAt(tx, protocol.CacheEntryKey(key), rec.Expires)
}
