package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Flow versions. A job runs, from start to finish, on the definition of
// its flow it started on: its meta records the flow's version and content
// hash, and every message of the job names the definition by its flow
// key, "name#hash" (the first 16 hex digits of the hash). Workers keep
// every version registered with them side by side; a worker without a
// job's definition leaves its messages for a worker that has it (unserved,
// below). Messages from before versions name a bare flow, which means the
// newest version registered.

// flowKeySep separates a flow's name from its hash in a flow key.
const flowKeySep = protocol.FlowKeySep

// contentHash is the hex SHA-256 of what a flow does: its name, version,
// nodes (with each task's declaration, params and control settings),
// edges and budget. Go code is not in it: a new build of the same nodes
// is the same definition.
func contentHash(f *Flow) (string, error) {
	type taskDigest struct {
		ID, Version                      string
		Effects, Determinism, RetryOwner string
		Retry                            runtype.RetryPolicy
		KeySchema                        string
		KeyFields, Capabilities, Egress  []string
		Timeout, HeartbeatTimeout        time.Duration
		UndoKey                          []string `json:",omitempty"`
		KeyScope                         string   `json:",omitempty"`
	}
	digestOf := func(t Task, undoKey []string) *taskDigest {
		if t == nil {
			return nil
		}
		i := t.Info()
		d := &taskDigest{i.ID, i.Version, i.Effects.String(), i.Determinism.String(), i.RetryOwner.String(), i.Retry,
			i.KeySchema, i.KeyFields, i.Capabilities, i.Egress, i.Timeout, i.HeartbeatTimeout, undoKey, ""}
		if i.KeyScope != flowtype.ScopeNode {
			d.KeyScope = i.KeyScope.String() // absent for the default, so older hashes hold
		}
		return d
	}
	type nodeDigest struct {
		Alias      string
		Task, Undo *taskDigest
		Params     json.RawMessage
		Switch     *runtype.Switch
		ForEach    *runtype.ForEach
		Subflow    *runtype.Subflow
		Checkpoint *runtype.Checkpoint
		Sleep      *runtype.Sleep `json:",omitempty"`
	}
	d := struct {
		Name, Version         string
		Nodes                 []nodeDigest
		Edges                 []runtype.Edge
		Budget                runtype.Budget
		OnCompensationFailure runtype.CompensationFailure `json:",omitempty"`
	}{Name: f.Name, Version: f.Version, Edges: f.Edges, Budget: f.Budget, OnCompensationFailure: f.OnCompensationFailure}
	for _, n := range f.Nodes {
		nd := nodeDigest{Alias: n.Alias, Task: digestOf(n.Task, nil), Params: n.Params, Switch: n.Switch, ForEach: n.ForEach, Subflow: n.Subflow, Checkpoint: n.Checkpoint, Sleep: n.Sleep}
		if n.Compensate != nil {
			nd.Undo = digestOf(n.Compensate.Task, n.Compensate.UndoKey)
		}
		d.Nodes = append(d.Nodes, nd)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("flow %s: content hash: %w", f.Name, err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// flowRef is how a caller or a message names a flow: its bare name (the
// newest version), name@version, or a flow key (name#hash).
type flowRef struct {
	name, version, hash string
}

func parseFlowRef(ref string) flowRef {
	if name, hash, ok := strings.Cut(ref, flowKeySep); ok {
		return flowRef{name: name, hash: hash}
	}
	if name, version, ok := strings.Cut(ref, "@"); ok {
		return flowRef{name: name, version: version}
	}
	return flowRef{name: ref}
}

// catalog holds the flow definitions an engine serves: every one by flow
// key, and each flow's definitions, newest first.
type catalog struct {
	mu       sync.RWMutex
	byKey    map[string]*compiled
	versions map[string][]*compiled
}

func newCatalog() *catalog {
	return &catalog{byKey: map[string]*compiled{}, versions: map[string][]*compiled{}}
}

// register adds c to the flows the engine serves: a definition already
// registered (same key) is replaced by its new build, and a version
// registered before with other content is refused, since jobs on it would
// change course mid-way.
func (cat *catalog) register(c *compiled) error {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	versions := cat.versions[c.Name]
	for i, old := range versions {
		switch {
		case old.key == c.key:
			versions[i] = c
			cat.byKey[c.key] = c
			return nil
		case c.Version != "" && old.Version == c.Version:
			return fmt.Errorf("flow %s version %s: registered before with other content (%s, now %s): give a changed flow a new version, and keep the old one registered while its jobs run",
				c.Name, c.Version, old.hash[:16], c.hash[:16])
		}
	}
	cat.byKey[c.key] = c
	// Newest first: by semantic version where both have one, else the
	// later registration.
	versions = append([]*compiled{c}, versions...)
	slices.SortStableFunc(versions, func(a, b *compiled) int {
		va, vb := "v"+strings.TrimPrefix(a.Version, "v"), "v"+strings.TrimPrefix(b.Version, "v")
		if semver.IsValid(va) && semver.IsValid(vb) {
			return semver.Compare(vb, va)
		}
		return 0
	})
	cat.versions[c.Name] = versions
	return nil
}

// flow returns the definition ref names (see flowRef).
// runtype.ErrUnknownFlow when the engine has no version of the flow;
// runtype.ErrFlowVersionMissing when it has others, not the one named.
func (cat *catalog) flow(ref string) (*compiled, error) {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	if c, ok := cat.byKey[ref]; ok {
		return c, nil
	}
	r := parseFlowRef(ref)
	versions := cat.versions[r.name]
	if len(versions) == 0 {
		return nil, fmt.Errorf("flow %q: %w", r.name, runtype.ErrUnknownFlow)
	}
	switch {
	case r.hash != "":
		return nil, fmt.Errorf("flow %s definition %s: %w (this worker has %s)", r.name, r.hash, runtype.ErrFlowVersionMissing, describeVersions(versions))
	case r.version != "":
		for _, c := range versions {
			if c.Version == r.version {
				return c, nil
			}
		}
		return nil, fmt.Errorf("flow %s version %s: %w (this worker has %s)", r.name, r.version, runtype.ErrFlowVersionMissing, describeVersions(versions))
	}
	return versions[0], nil
}

// describeVersions names the versions a worker has, newest first.
func describeVersions(versions []*compiled) string {
	var names []string
	for _, c := range versions {
		names = append(names, c.describe())
	}
	return strings.Join(names, ", ")
}

// describe names a definition: version and short hash.
func (c *compiled) describe() string { return describeDefinition(c.Version, c.hash) }

// describeDefinition names the definition of version (none: unversioned)
// whose content hash is hash, as the history and logs spell it.
func describeDefinition(version, hash string) string {
	short := hash[:min(16, len(hash))]
	if version == "" {
		return "unversioned " + short
	}
	return version + " (" + short + ")"
}

// Flows lists the definitions the engine serves, by name, newest version
// first.
func (e *Engine) Flows() []runtype.FlowVersion { return e.flows.list() }

// list is Flows.
func (cat *catalog) list() []runtype.FlowVersion {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	var out []runtype.FlowVersion
	for _, versions := range cat.versions {
		for i, c := range versions {
			out = append(out, runtype.FlowVersion{Name: c.Name, Version: c.Version, Hash: c.hash, Newest: i == 0})
		}
	}
	slices.SortStableFunc(out, func(a, b runtype.FlowVersion) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// newest reports whether c is its flow's newest registered definition.
func (cat *catalog) newest(c *compiled) bool {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	vs := cat.versions[c.Name]
	return len(vs) > 0 && vs[0] == c
}

// A worker without a job's flow definition leaves the job's messages for
// a worker that has it: it hands the message back, lets go of the job's
// lease (so that such a worker can take the job at once) and records that
// the activation waits for one (unserved/<act>, which inspection shows).
// Past unservedGrace with no worker taking it, the message goes to the
// dead-letter stream, where an operator requeues it after deploying the
// version, or fails it.
const (
	unservedRetry = time.Second
	unservedGrace = 15 * time.Minute
)

// unservedRecord is stored at pid/<root>/unserved/<act>.
type unservedRecord struct {
	Act    string    `json:"act"`
	Flow   string    `json:"flow"`
	Reason string    `json:"reason"`
	Worker string    `json:"worker"`
	Since  time.Time `json:"since"`
	Seen   int       `json:"seen"`
}

// leaveUnserved hands en back, in the entry's transaction, for a worker
// that has its flow definition, or dead-letters it past the grace period;
// why is the lookup's error. The delivery takes no lease.
func (pw *protocolWriter) leaveUnserved(tx store.Tx, en *entry, why error) error {
	if _, logged := pw.unservedLogged.LoadOrStore(en.t.Flow, true); !logged {
		pw.log.Warn("leaving a job's messages for a worker that has its flow", "flow", en.t.Flow, "job", en.job, "reason", why)
	}
	now := pw.now().UTC()
	rec := unservedRecord{Act: en.t.Act, Flow: en.t.Flow, Since: now}
	if _, err := protocol.GetJSON(tx, protocol.UnservedKey(en.job, en.t.Act), &rec); err != nil {
		return err
	}
	en.unserved = true
	rec.Reason, rec.Worker, rec.Seen = why.Error(), pw.opts.Owner, rec.Seen+1
	if err := protocol.PutJSON(tx, protocol.UnservedKey(en.job, en.t.Act), rec); err != nil {
		return err
	}
	if now.Sub(rec.Since) < unservedGrace {
		return en.handBack(tx, unservedRetry)
	}
	en.deferred = true
	if err := en.uncount(tx); err != nil {
		return err
	}
	reason := fmt.Sprintf("no worker took it for %s: %v; deploy the version, then flowgen dlq requeue", now.Sub(rec.Since).Round(time.Second), why)
	return ignoreStale(tx.DeadLetter(en.m.Receipt, reason))
}

// FlowGraph returns the graph of the registered definition ref names
// (name, name@version or name#hash16; a bare name is the newest).
func (e *Engine) FlowGraph(ref string) (runtype.FlowGraph, error) {
	c, err := e.flows.flow(ref)
	if err != nil {
		return runtype.FlowGraph{}, err
	}
	g := runtype.FlowGraph{FlowVersion: runtype.FlowVersion{Name: c.Name, Version: c.Version, Hash: c.hash, Newest: e.flows.newest(c)}}
	for _, n := range c.Nodes {
		gn := runtype.GraphNode{Alias: n.Alias, Entry: slices.Contains(c.entries, n.Alias), Compensated: n.Compensate != nil}
		switch {
		case n.Task != nil:
			info := n.Task.Info()
			gn.Kind, gn.Effects, gn.DataClass = runtype.NodeTask, info.Effects, info.DataClass
			if info.ID != "" {
				gn.Connector = info.ID + "@" + info.Version
			}
		case n.Switch != nil:
			gn.Kind = runtype.NodeSwitch
		case n.ForEach != nil:
			gn.Kind, gn.Body = runtype.NodeForEach, n.ForEach.Do
		case n.Checkpoint != nil:
			gn.Kind = runtype.NodeCheckpoint
		case n.Subflow != nil:
			gn.Kind, gn.Subflow = runtype.NodeSubflow, n.Subflow.Flow
		case n.Sleep != nil:
			gn.Kind = runtype.NodeSleep
		}
		g.Nodes = append(g.Nodes, gn)
	}
	for _, ed := range c.Edges {
		g.Edges = append(g.Edges, runtype.GraphEdge{From: ed.From, Port: ed.FromPort, To: ed.To, Delivery: ed.Delivery, Loop: ed.MaxIterations})
	}
	return g, nil
}
