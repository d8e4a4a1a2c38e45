package engine

import (
	"context"
	"math"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A connector's rate limit is a token bucket in the store
// (rate/<connector>), so every worker of every process on the store draws
// from the same one, one at a time. A call takes a token in a commit of its own before it
// runs; without one, its message goes back to the stream until the next
// token is due, with no attempt spent, and the worker moves on.

// bucket is stored at rate/<connector>.
type bucket struct {
	Tokens float64   `json:"tokens"`
	At     time.Time `json:"at"`
}

// burst is how many tokens the bucket holds at most.
func burst(l runtype.RateLimit) float64 {
	if l.Burst > 0 {
		return float64(l.Burst)
	}
	return max(1, math.Ceil(l.QPS))
}

// takeToken takes a token of the node's rate limit, or hands the message
// back until one is due and returns errRetryLater.
func (pw *protocolWriter) takeToken(ctx context.Context, en *entry, info runtype.NodeInfo) error {
	limit := info.RateLimit
	var wait time.Duration
	err := pw.store.Update(ctx, func(tx store.Tx) error {
		// Concurrent takes read the bucket one after another.
		if err := protocol.LockRow(tx, protocol.RateKey(info.ID)); err != nil {
			return err
		}
		now := pw.now()
		b := bucket{Tokens: burst(limit), At: now}
		if _, err := protocol.GetJSON(tx, protocol.RateKey(info.ID), &b); err != nil {
			return err
		}
		if elapsed := now.Sub(b.At); elapsed > 0 {
			b.Tokens = min(burst(limit), b.Tokens+elapsed.Seconds()*limit.QPS)
			b.At = now
		}
		wait = 0
		if b.Tokens < 1 {
			wait = time.Duration(math.Ceil((1 - b.Tokens) / limit.QPS * float64(time.Second)))
			return en.handBack(tx, wait)
		}
		b.Tokens--
		return protocol.PutJSON(tx, protocol.RateKey(info.ID), b)
	})
	if err != nil {
		return err
	}
	if wait > 0 {
		return errRetryLater
	}
	return nil
}
