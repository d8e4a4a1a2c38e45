package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/idemkey"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// processor is the processor contour: it runs exactly one activation
// through its aspects (boundary input, dedupe, the call with its timeout,
// key and capabilities, retries) and returns its result. It never routes
// and writes nothing: it reads the store through a view, asks the
// protocol writer for what an attempt holds while it runs (the job's
// lease and the message, a rate limit's token), and leaves the hand-back
// of a retry in the delivery (entry.later) for its worker to commit.
type processor struct {
	view    viewer
	holds   holder
	opts    *Options // the engine's, defaults applied
	log     *slog.Logger
	metrics metrics
	tracing *tracing
}

// viewer reads the store: the processor's only way to it.
type viewer interface {
	View(ctx context.Context, fn func(store.ReadTx) error) error
}

// holder is what an attempt holds while it runs, which the protocol
// writer takes: the job's lease and the message's reservation for as long
// as the call may run (keepHold), and a token of the node's rate limit
// (takeToken).
type holder interface {
	keepHold(ctx context.Context, en *entry, timeout time.Duration) (stop func(), err error)
	takeToken(ctx context.Context, en *entry, info runtype.NodeInfo) error
}

func (p *processor) now() time.Time { return p.opts.Now() }

// work is the processor contour: it runs exactly one activation and returns
// its result, or errRetryLater when the message goes back for a retry (the
// hand-back, if it has one to commit, is en.later).
// It never routes.
func (p *processor) work(ctx context.Context, c *compiled, en *entry) (res result, err error) {
	p.metrics.Add(observe.Started, 1, flowName(en.t.Flow), en.t.Node)
	ctx, traced := p.tracing.activation(ctx, en)
	defer func() { traced(res, err) }()
	return p.attempt(ctx, c, en)
}

// attempt is work without its span and count.
func (p *processor) attempt(ctx context.Context, c *compiled, en *entry) (result, error) {
	t, m := en.t, en.m
	n := c.byAlias[t.Node]
	if res, refused := p.refused(en); refused {
		return res, nil
	}
	if t.InputRef != "" {
		in, err := p.loadBoundary(ctx, t.InputRef)
		if err != nil {
			return result{}, err
		}
		t.Input = in
	}
	if res, decided, err := p.control(ctx, en, t, n); decided {
		return res, err
	}
	task, keyFields, params := n.Task, []string(nil), n.Params
	if t.Kind == protocol.Undo {
		task, keyFields, params = n.Compensate.Task, n.Compensate.UndoKey, nil
	}
	info := task.Info()
	if keyFields != nil {
		info.KeyFields = keyFields
	}
	// A compensation under CompensateRetry is tried until it succeeds.
	untilDone := t.Kind == protocol.Undo && c.OnCompensationFailure == runtype.CompensateRetry
	if res, done, err := p.before(ctx, en, t, info, untilDone); done || err != nil {
		return res, err
	}
	log := make(aspectLog, 0, 4) // call start and end, then output or retry
	log.Add(p.now(), "call", "start", "attempt "+strconv.Itoa(m.Attempt))
	stop, err := p.holds.keepHold(ctx, en, p.timeout(info))
	if err != nil {
		return result{}, err
	}
	out, err := p.call(ctx, task, info, params, t, m.Attempt, &en.heartbeat)
	stop()
	if err == nil {
		log.Add(p.now(), "call", "end", "")
		log.Add(p.now(), "output", "end", "port out")
		return result{Output: out, Port: "out", Attempts: m.Attempt, Steps: log}, nil
	}
	kind := runtype.KindOf(err)
	log.Add(p.now(), "call", "error", kind.String()+": "+err.Error())
	retryable := info.RetryOwner == flowtype.RetryOrchestrator && info.Retry.Retryable(kind, m.Attempt)
	if (retryable || untilDone) && ctx.Err() == nil {
		return result{}, p.retryLater(ctx, en, info, err, retryable, untilDone, log)
	}
	if ctx.Err() != nil {
		return result{}, ctx.Err() // shutting down: leave the message for redelivery
	}
	log.Add(p.now(), "retry", "end", "no retry: final")
	return result{ErrKind: runtype.FailureOf(kind), Err: withoutKind(err), Attempts: m.Attempt, Steps: log, TimedOut: errors.Is(err, errTimedOut)}, nil
}

// refused is the result of an activation that may not run at all: one
// whose deliveries were exhausted, a dead letter an operator failed, one
// the router refused or whose job's deadline passed.
func (p *processor) refused(en *entry) (result, bool) {
	t, m := en.t, en.m
	switch {
	case en.exhausted != "":
		return result{ErrKind: runtype.Exhausted, Err: en.exhausted, Attempts: m.Attempt}, true
	case t.Failed != "":
		return result{ErrKind: runtype.DeadLettered, Err: t.Failed, Attempts: m.Attempt}, true
	}
	if t.Refused == "" {
		t.Refused = overdue(t, p.now())
	}
	if t.Refused != "" {
		return result{ErrKind: runtype.FailureOf(flowtype.PolicyDenied), Err: t.Refused, Attempts: 1}, true
	}
	return result{}, false
}

// control decides an activation of a node that runs no connector: a
// subflow, a join, a switch, a checkpoint, a sleep or a forEach; decided
// is false for any other (a connector's call, a compensation).
func (p *processor) control(ctx context.Context, en *entry, t task, n *Node) (res result, decided bool, err error) {
	job := en.job
	switch {
	case n.Subflow != nil && t.Kind != protocol.Undo:
		res, err = p.subflowResult(ctx, job, t, n.Subflow)
	case t.Kind == protocol.Join:
		res, err = p.join(ctx, job, t, n.ForEach)
	case n.Switch != nil:
		res = result{Output: t.Input, Port: switchPort(n.Switch, t.Input), Attempts: 1}
	case n.Checkpoint != nil:
		res, err = p.decision(ctx, job, t)
	case n.Sleep != nil:
		res, err = p.sleep(ctx, en, n.Sleep)
	case n.ForEach != nil:
		items, lookupErr := lookupArray(t.Input, n.ForEach.Items)
		if lookupErr != nil {
			return result{ErrKind: runtype.FailureOf(flowtype.SchemaMismatch), Err: lookupErr.Error(), Attempts: 1}, true, nil
		}
		res = result{Output: t.Input, Port: "out", Attempts: 1, Elements: len(items)}
	default:
		return result{}, false, nil
	}
	return res, true, err
}

// before is what an attempt of a connector's activation settles before
// calling it: an at-most-once delivery's later attempt, a compensation
// given up, a crash loop past its budget, a deduplicated or cached
// result, and the rate limit's token. done says res is the attempt's.
func (p *processor) before(ctx context.Context, en *entry, t task, info runtype.NodeInfo, untilDone bool) (res result, done bool, err error) {
	m := en.m
	if t.Delivery == flowtype.AtMostOnce && m.Attempt > 1 {
		return result{ErrKind: runtype.NotDelivered, Err: "at-most-once delivery: an earlier attempt did not commit", Attempts: m.Attempt}, true, nil
	}
	if t.Kind == protocol.Undo && strings.HasPrefix(t.Resume, skipResume+"#") {
		return result{ErrKind: runtype.FailureOf(flowtype.Permanent), Err: "given up by a decision after it failed", Attempts: m.Attempt}, true, nil
	}
	if budget := DeliveryBudget(info.Retry); m.Attempt > budget && !untilDone {
		err := fmt.Sprintf("delivered %d times without an outcome, past its %d retry attempts and %d more for workers that crash or stop: a crash loop",
			m.Attempt-1, max(info.Retry.MaxAttempts, 1), crashAllowance)
		return result{ErrKind: runtype.Exhausted, Err: err, Attempts: m.Attempt}, true, nil
	}
	if t.Delivery == flowtype.ExactlyOnce {
		if prev, ok, err := p.deduped(ctx, info, t); err != nil || ok {
			return prev, true, err
		}
	}
	if t.Kind != protocol.Undo && len(info.Cache.Key) > 0 {
		if hit, ok, err := p.cached(ctx, info, t); err != nil || ok {
			return hit, true, err
		}
	}
	if info.RateLimit.QPS > 0 {
		if err := p.holds.takeToken(ctx, en, info); err != nil {
			return result{}, true, err
		}
	}
	return result{}, false, nil
}

// retryLater hands a failed attempt back for a later one: its aspect log
// and a retrying event recorded, the message visible again after the
// policy's backoff (at least a Retry-After the error carries; a
// compensation that must succeed backs off on its own schedule). It
// leaves that hand-back in en.later, for the delivery's worker to commit,
// and returns errRetryLater.
func (p *processor) retryLater(ctx context.Context, en *entry, info runtype.NodeInfo, callErr error, retryable, untilDone bool, log aspectLog) error {
	t, m := en.t, en.m
	kind := runtype.KindOf(callErr)
	delay := info.Retry.Backoff(m.Attempt + 1)
	if !retryable || (untilDone && delay <= 0) {
		delay = compensationBackoff(m.Attempt)
	}
	var ce *runtype.Error
	if errors.As(callErr, &ce) && ce.RetryAfter > delay {
		delay = ce.RetryAfter
	}
	p.log.Info("activation failed, retrying", "act", t.Act, "attempt", m.Attempt, "kind", kind, "in", delay, "err", callErr)
	log.Add(p.now(), "retry", "end", fmt.Sprintf("attempt %d in %s", m.Attempt+1, delay))
	raw, _ := json.Marshal(log)
	ev := runtype.HistoryEvent{Event: runtype.EventRetrying, Act: t.Act, Attempt: m.Attempt, Detail: fmt.Sprintf("%s: %v; next attempt in %s", kind, withoutKind(callErr), delay)}
	en.later = &laterAttempt{delay: delay, retry: &retryRecord{log: raw, event: ev}}
	p.metrics.Add(observe.Retried, 1, flowName(t.Flow), t.Node, string(runtype.FailureOf(kind)))
	return errRetryLater
}

// afterOn returns how the engine runs a function later on the clock of
// after (Options.After): time.AfterFunc for the real clock (nil), which
// costs a timer and no goroutine until it fires; on an injected clock, a
// goroutine waiting on its channel.
func afterOn(after func(time.Duration) <-chan time.Time) func(time.Duration, func()) func() {
	if after == nil {
		return func(d time.Duration, f func()) func() {
			t := time.AfterFunc(d, f)
			return func() { t.Stop() }
		}
	}
	return func(d time.Duration, f func()) func() {
		done := make(chan struct{})
		go func() {
			select {
			case <-after(d):
				f()
			case <-done:
			}
		}()
		var once sync.Once
		return func() { once.Do(func() { close(done) }) }
	}
}

// compensationBackoff is the delay before retrying a compensation whose
// own policy gives none: 1 s, doubling, at most a minute.
func compensationBackoff(attempt int) time.Duration {
	return min(time.Second<<min(max(attempt-1, 0), 6), time.Minute)
}

// crashAllowance is how many deliveries beyond its retry attempts an
// activation may take without recording an outcome (each one's worker
// crashed or stopped mid-call) before it fails as Exhausted. Crashes and
// restarts are normal, and each costs a delivery; a node that crashes its
// worker every time would otherwise be delivered forever and hold its job
// up with it.
const crashAllowance = 10

// DeliveryBudget is how many deliveries an activation under retry may
// take: its attempts and the crash allowance.
func DeliveryBudget(retry runtype.RetryPolicy) int {
	return max(retry.MaxAttempts, 1) + crashAllowance
}

// withoutKind is err's message without the "Kind: " an *Error starts
// with: the result records the kind on its own.
func withoutKind(err error) string {
	if e, ok := err.(*runtype.Error); ok && e.RetryAfter == 0 && e.Err != nil {
		return e.Err.Error()
	}
	return err.Error()
}

// logicalTime is an activation's logical time: when it was published, or,
// for a task published before tasks carried it, when its job started, or
// this attempt.
func (p *processor) logicalTime(t task) time.Time {
	switch {
	case t.Published != 0:
		return time.Unix(0, t.Published).UTC()
	case t.Started != 0:
		return time.Unix(0, t.Started).UTC()
	}
	return p.now().UTC()
}

// timeout is how long a call of the node may run: its own timeout, else
// the engine's.
func (p *processor) timeout(info runtype.NodeInfo) time.Duration {
	if info.Timeout > 0 {
		return info.Timeout
	}
	return p.opts.Timeout
}

// errTimedOut marks the failure of an attempt that ran out of its timeout.
var errTimedOut = errors.New("timed out")

// call runs a node once with its timeout, key and capabilities; a panic in
// node code is a Permanent failure, not a crash of the worker.
func (p *processor) call(ctx context.Context, task Task, info runtype.NodeInfo, params json.RawMessage, t task, attempt int, heartbeat *atomic.Int64) (out json.RawMessage, err error) {
	key, err := activationKey(info, t)
	if err != nil {
		return nil, runtype.NewError(flowtype.SchemaMismatch, err)
	}
	timeout := p.timeout(info)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if info.HeartbeatTimeout > 0 {
		var stop func()
		cctx, stop = p.watchHeartbeat(cctx, info.HeartbeatTimeout, heartbeat)
		defer stop()
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, runtype.Errorf(flowtype.Permanent, "node %s panicked: %v\n%s", t.Node, p, debug.Stack())
		}
	}()
	out, err = task.Call(cctx, Call{Info: info, Key: key, Attempt: attempt, Params: params, Input: t.Input, Heartbeat: heartbeat, At: p.logicalTime(t)})
	switch {
	case ctx.Err() != nil: // shutting down or killed: not the node's failure
	case errors.Is(context.Cause(cctx), errNoHeartbeat):
		out, err = nil, runtype.Errorf(flowtype.Transient, "node %s %w: %w for %s", t.Node, errTimedOut, errNoHeartbeat, info.HeartbeatTimeout)
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		out, err = nil, runtype.Errorf(flowtype.Transient, "node %s %w after %s", t.Node, errTimedOut, timeout)
	}
	return out, err
}

// errNoHeartbeat is the cause of an attempt cancelled for going longer
// than its node's heartbeat timeout without a heartbeat.
var errNoHeartbeat = errors.New("no heartbeat")

// watchHeartbeat returns ctx cancelled with errNoHeartbeat once timeout
// passes, on the engine's clock, without the heartbeat count moving. It
// looks every quarter of timeout, so it cancels between timeout and 1.5
// timeout after the last heartbeat. stop ends the watch.
func (p *processor) watchHeartbeat(ctx context.Context, timeout time.Duration, heartbeat *atomic.Int64) (_ context.Context, stop func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	// The watch starts with the call: its first look is armed before the
	// node runs.
	seen, last := heartbeat.Load(), p.now()
	tick := p.opts.After(timeout / 4)
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick:
			}
			tick = p.opts.After(timeout / 4)
			now := p.now()
			if beats := heartbeat.Load(); beats != seen {
				seen, last = beats, now
			} else if now.Sub(last) >= timeout {
				cancel(errNoHeartbeat)
				return
			}
		}
	}()
	return wctx, func() {
		close(done)
		<-finished
		cancel(nil)
	}
}

// activationKey computes the canonical idempotency key of an activation
// from the key fields of its input; empty for nodes without a key.
func activationKey(info runtype.NodeInfo, t task) (string, error) {
	if len(info.KeyFields) == 0 {
		return "", nil
	}
	if t.Kind == protocol.Undo {
		return IdempotencyKey(info, t.Node+"#undo", t.Input) // the undo of a node has keys of its own
	}
	var partition string
	if info.KeyScope == flowtype.ScopePartition && t.Partition != "" {
		all, err := idemkey.ParseFields(t.Input)
		if err != nil {
			return "", fmt.Errorf("idempotency key of %s: %w", t.Node, err)
		}
		v, ok := fieldAt(all, t.Partition)
		if !ok {
			return "", fmt.Errorf("idempotency key of %s: input has no partition key field %q", t.Node, t.Partition)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("idempotency key of %s: partition key %q: %w", t.Node, t.Partition, err)
		}
		partition = string(raw)
	}
	return IdempotencyKey(info, runtype.KeyNode(t.Node, info.KeyScope, t.Via, partition), t.Input)
}

// IdempotencyKey is the key the engine gives an activation of the flow node
// named node (runtype.KeyNode: the alias, scoped as the connector says) with this input: lowercase hex of the canonical key over the
// node's key fields (dotted paths into the input). Empty when the node
// declares no key fields. Generated IdempotencyKey functions compute the
// same key from typed input.
func IdempotencyKey(info runtype.NodeInfo, node string, input json.RawMessage) (string, error) {
	if len(info.KeyFields) == 0 {
		return "", nil
	}
	k, err := canonicalKey(info.KeySchema, node, info.KeyFields, input)
	if err != nil {
		return "", fmt.Errorf("idempotency key of %s: %w", node, err)
	}
	return k, nil
}

// canonicalKey is the lowercase hex canonical key (package idemkey) of
// schema and node over the fields of input at the dotted paths keyFields.
func canonicalKey(schema, node string, keyFields []string, input json.RawMessage) (string, error) {
	all, err := idemkey.ParseFields(input)
	if err != nil {
		return "", err
	}
	fields := make(map[string]any, len(keyFields))
	for _, f := range keyFields {
		v, ok := fieldAt(all, f)
		if !ok {
			return "", fmt.Errorf("input has no field %q", f)
		}
		fields[f] = v
	}
	k, err := idemkey.Compute(idemkey.Input{Schema: schema, Node: node, Fields: fields})
	if err != nil {
		return "", err
	}
	return k.String(), nil
}

// fieldAt resolves a dotted key-field path ("customer.id") in a decoded
// JSON object.
func fieldAt(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for seg := range strings.SplitSeq(path, ".") {
		m, isObj := cur.(map[string]any)
		if !isObj {
			return nil, false
		}
		if cur, isObj = m[seg]; !isObj {
			return nil, false
		}
	}
	return cur, true
}

// aspectLog is an attempt's aspect step log (protocol.AspectLog).
type aspectLog = protocol.AspectLog

// joined is what a join reads of an element's result: decoding no more
// skips the rest (the aspect log and its times) without allocating it.
type joined struct {
	Output json.RawMessage `json:"output"`
	Err    string          `json:"error"`
}

// join aggregates a forEach: the outputs of its body activations in element
// order, or a failure naming the elements that failed.
func (p *processor) join(ctx context.Context, job runtype.JobID, t task, fe *runtype.ForEach) (result, error) {
	var outputs []json.RawMessage
	var failed []string
	err := p.view.View(ctx, func(tx store.ReadTx) error {
		// The join knows its fan-out's size; one published before joins
		// carried it read it from the forEach's counter, which then
		// counted elements.
		n := int64(t.Aggregate.Expect)
		if n == 0 {
			var err error
			if n, err = tx.Counter(protocol.AggregateKey(job, t.Aggregate.ForEach)); err != nil {
				return err
			}
		}
		outputs = make([]json.RawMessage, n)
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = protocol.ResultKey(job, runtype.StepOf(fe.Do, t.Dim.Element(i), t.Node).String())
		}
		results, _, err := tx.ReadMany(keys, nil) // one read for all elements
		if err != nil {
			return err
		}
		for i, raw := range results {
			if raw == nil {
				return fmt.Errorf("element %d: result %q: %w", i, keys[i], store.ErrNotFound)
			}
			var r joined
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			if r.Err != "" {
				failed = append(failed, fmt.Sprintf("element %d: %s", i, r.Err))
				outputs[i] = json.RawMessage("null")
				continue
			}
			outputs[i] = r.Output
		}
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("join %s: %w", t.Act, err)
	}
	if ok, need := len(outputs)-len(failed), fe.Needed(len(outputs)); ok < need {
		return result{ErrKind: runtype.FailureOf(flowtype.Permanent), Err: fmt.Sprintf("%d of %d elements succeeded, %d needed: %v", ok, len(outputs), need, failed), Attempts: 1}, nil
	}
	if outputs == nil {
		outputs = []json.RawMessage{}
	}
	raw, err := json.Marshal(outputs)
	if err != nil {
		return result{}, err
	}
	return result{Output: raw, Port: "out", Attempts: 1}, nil
}

// viewJSON decodes the JSON value under key, read in a transaction of its
// own, into v.
func (e *Engine) viewJSON(ctx context.Context, key []byte, v any) error {
	found, err := lookupJSON(ctx, e.store, key, v)
	if err == nil && !found {
		err = store.ErrNotFound
	}
	return err
}

// Status returns the job's current status.
func (e *Engine) Status(ctx context.Context, job runtype.JobID) (runtype.JobStatus, error) {
	var st runtype.JobStatus
	err := e.store.View(ctx, func(tx store.ReadTx) error {
		var found bool
		var err error
		if st, found, err = readStatus(tx, job); err == nil && !found {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return st, fmt.Errorf("status of job %s: %w", job, err)
	}
	return st, nil
}

// Wait polls until the job finishes or ctx ends.
func (e *Engine) Wait(ctx context.Context, job runtype.JobID) (runtype.JobStatus, error) {
	for {
		st, err := e.Status(ctx, job)
		if err != nil || st.Done() {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
