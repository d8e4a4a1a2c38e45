package engine

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// routeIn asks the router what follows en's activation, finished with
// res, and applies its marks in tx: it returns the activations to
// publish, and the fan-out shard the activation completed, which the
// transaction counts last (gatherAll).
func (pw *protocolWriter) routeIn(tx store.Tx, c *compiled, en *entry, res result) ([]task, *gather, error) {
	job, t := en.job, en.t
	rt, err := pw.router.route(c, t, res)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case rt.arrives:
		return pw.arrive(tx, job, t)
	case rt.haltAt > 0:
		return nil, nil, tx.Put(protocol.CompensationHaltKey(job), []byte(strconv.Itoa(rt.haltAt)))
	case rt.undo > 0:
		next, err := undoTask(tx, job, t.Flow, rt.undo, t.Compensation.Of)
		if err != nil {
			return nil, nil, err
		}
		return []task{next}, nil, nil
	case rt.keep != nil:
		if err := tx.Put(protocol.ItemsKey(job, t.Act), rt.keep); err != nil {
			return nil, nil, err
		}
	}
	return rt.next, nil, nil
}

// arrive counts body t's arrival at its fan-out's join, and returns what
// the router says the count leads to. A body of a sharded fan-out counts
// on its shard, and one that completes the shard returns it as a gather.
func (pw *protocolWriter) arrive(tx store.Tx, job runtype.JobID, t task) ([]task, *gather, error) {
	forEach, err := forEachOf(t)
	if err != nil {
		return nil, nil, err
	}
	e := t.Element
	if shard, size, shards := shardOf(t); shards > 0 {
		n, err := tx.Add(protocol.AggregateShardKey(job, e.ForEach, shard), 1, int64(size))
		if err != nil || n < int64(size) {
			return nil, nil, err
		}
		return nil, &gather{job: job, body: t}, nil
	}
	n, err := tx.Add(protocol.AggregateKey(job, e.ForEach), 1, int64(e.Expect))
	if err != nil {
		return nil, nil, err
	}
	a := pw.router.arrived(t, n)
	switch {
	case a.join:
		return []task{joinTask(forEach, e.Expect)}, nil, nil
	case a.element < 0:
		return nil, nil, nil
	}
	raw, err := tx.Get(protocol.ItemsKey(job, e.ForEach))
	if err != nil {
		return nil, nil, fmt.Errorf("forEach %s: elements: %w", e.ForEach, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || a.element >= len(items) {
		return nil, nil, fmt.Errorf("forEach %s: element %d of %d: %v", e.ForEach, a.element, len(items), err)
	}
	return []task{pw.router.element(t, forEach, a.element, items[a.element])}, nil, nil
}
