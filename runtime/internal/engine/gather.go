package engine

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A fan-out's bodies count their finished elements so that the last one
// publishes the join. One counter would be a row every body's commit
// locks, so a large fan-out counts in shards (shardOf), and the shards a
// transaction completed count on the forEach's counter after all its
// other writes (gatherAll).

// minShardedFanOut is the smallest fan-out whose bodies count their
// finished elements in shards (see shardOf).
const minShardedFanOut = 16

// shardOf places body t in the shards its fan-out counts finished elements
// in: about √Expect shards of about √Expect elements, so no counter row
// takes more than that many of the fan-out's commits (which lock it until
// they commit), and the bodies that complete a shard count it on the
// forEach's own counter. It returns the body's shard, that shard's size and
// the number of shards, or 0 shards when the fan-out counts elements on
// the forEach's counter alone: a small one, a windowed one (each finished
// body learns how many finished, to start the next) and one published
// before bodies were grouped.
func shardOf(t task) (shard, size, shards int) {
	if t.Kind != protocol.Body {
		return 0, 0, 0
	}
	e := t.Element
	if !e.Grouped || e.Window > 0 || e.Expect < minShardedFanOut {
		return 0, 0, 0
	}
	per := int(math.Ceil(math.Sqrt(float64(e.Expect))))
	shard, shards = e.Index/per, (e.Expect+per-1)/per
	return shard, min(per, e.Expect-shard*per), shards
}

// gather is a shard of a fan-out that body completed. The transaction
// that commits the body counts it on the forEach's counter after every
// other write (gatherAll), so that the rows of a fan-out are locked in one
// order by every transaction: its shards in ascending order, each job's in
// turn, then the forEach counters. A transaction that counted a shard on
// the forEach's counter at once, in the middle of a batch, would hold that
// counter while it went on to lock a later shard, and one that holds the
// later shard would wait for the counter: deadlocks, each costing
// PostgreSQL's deadlock timeout.
type gather struct {
	job  runtype.JobID
	body task
}

// gatherAll counts the shards gs completed on their forEach counters, in
// job and forEach order, and publishes the join of each fan-out whose last
// shard this is. Grouped bodies hold the group's count on the semaphore,
// which passes to the join: the semaphore does not move.
func (pw *protocolWriter) gatherAll(tx store.Tx, gs []*gather) error {
	slices.SortFunc(gs, func(a, b *gather) int {
		if c := bytes.Compare(a.job[:], b.job[:]); c != 0 {
			return c
		}
		return strings.Compare(a.body.Element.ForEach, b.body.Element.ForEach)
	})
	for _, g := range gs {
		t := g.body
		_, _, shards := shardOf(t)
		n, err := tx.Add(protocol.AggregateKey(g.job, t.Element.ForEach), 1, int64(shards))
		if err != nil {
			return err
		}
		if n < int64(shards) {
			continue
		}
		forEach, err := forEachOf(t)
		if err != nil {
			return err
		}
		join := []task{joinTask(forEach, t.Element.Expect)}
		budgetOf(t).stamp(join)
		if err := spend(tx, g.job, budgetOf(t), join); err != nil {
			return err
		}
		if err := pw.publish(tx, g.job, join[0]); err != nil {
			return err
		}
	}
	return nil
}

// lockOrder sorts the folded deliveries of a batch so that its units lock
// the rows of a fan-out in the one order every transaction takes them
// (see gather): by job, the job's forEach bodies first, by forEach and
// element, then its other deliveries as they came.
func lockOrder(a, b foldable) int {
	if c := bytes.Compare(a.en.job[:], b.en.job[:]); c != 0 {
		return c
	}
	ta, tb := a.en.t, b.en.t
	if (ta.Kind == protocol.Body) != (tb.Kind == protocol.Body) {
		if ta.Kind == protocol.Body {
			return -1
		}
		return 1
	}
	if ta.Kind != protocol.Body {
		return 0
	}
	if c := strings.Compare(ta.Element.ForEach, tb.Element.ForEach); c != 0 {
		return c
	}
	return ta.Element.Index - tb.Element.Index
}
