package flowir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
)

// Pass is one independent validation of a resolved flow.
type Pass struct {
	Name string
	Doc  string
	Run  func(g *Graph, diags *diag.List)
}

// Passes are run in order on every loaded flow. Type inference comes first
// because later passes read port schemas.
var Passes = []Pass{
	{"cycles", "report cycles (DAG200) with the nodes on them, and back edges that do not close a bounded loop (DAG207)", cycles},
	{"types", "type control-node ports and check every edge's schemas (DAG201, CTRL011)", portTypes},
	{"overrides", "overrides may only tighten effects and determinism (EFFECT202, DET303)", overrides},
	{"retry", "one retry owner per node (RETRY010)", retryOwners},
	{"delivery", "delivery guarantees are backed by dedupe and idempotent sinks (EXACT001, EXACT005, IDEM020, IDEM025)", delivery},
	{"egress", "connector egress falls within the flow's allowlist (EGRESS101)", egress},
	{"compensation", "compensators exist and accept what they undo (SAGA201)", compensation},
}

// cycles reports each strongly connected component with more than one node,
// or a self-loop, once, with one concrete cycle through it.
func cycles(g *Graph, diags *diag.List) {
	succ := make([][]*GraphEdge, len(g.Nodes))
	for _, e := range g.Edges {
		if !e.Back() {
			succ[e.From.index] = append(succ[e.From.index], e)
		}
	}
	for _, e := range g.Edges {
		if e.Back() {
			backEdge(e, succ, diags)
		}
	}
	// Tarjan's algorithm, iterative so that deep flows cannot exhaust the stack.
	n := len(g.Nodes)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	next := 0
	type frame struct{ v, edge int }
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			top := &call[len(call)-1]
			if top.edge < len(succ[top.v]) {
				w := succ[top.v][top.edge].To.index
				top.edge++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] {
					low[top.v] = min(low[top.v], index[w])
				}
				continue
			}
			v := top.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				low[call[len(call)-1].v] = min(low[call[len(call)-1].v], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			reportCycle(g, succ, comp, diags)
		}
	}
}

// backEdge checks that a cycle edge closes a bounded, conditional loop: it
// leaves a switch or checkpoint (so the loop can end), returns to a node
// from which the source is reachable along forward edges, and allows 1 to
// MaxCycleIterations passes.
func backEdge(e *GraphEdge, succ [][]*GraphEdge, diags *diag.List) {
	const fix = "point the cycle edge from a switch or checkpoint port back to a node that leads to it, with maxIterations between 1 and 1000000"
	if n := e.Cycle.MaxIterations; n < 1 || n > MaxCycleIterations {
		diags.Add(e.Cycle.At("maxIterations"), diag.DAG207, fix, "cycle %s -> %s: maxIterations %d is outside 1..%d", e.From, e.To, n, MaxCycleIterations)
	}
	if k := e.From.Kind(); k != KindSwitch && k != KindCheckpoint {
		diags.Add(e.At("from"), diag.DAG207, fix, "cycle %s -> %s leaves %s, which is not a switch or checkpoint: the loop could never end", e.From, e.To, e.From)
		return
	}
	seen := map[int]bool{e.To.index: true}
	for queue := []int{e.To.index}; len(queue) > 0; queue = queue[1:] {
		for _, f := range succ[queue[0]] {
			if w := f.To.index; !seen[w] {
				seen[w] = true
				queue = append(queue, w)
			}
		}
	}
	if !seen[e.From.index] {
		diags.Add(e.At("to"), diag.DAG207, fix, "cycle %s -> %s does not go back: %s does not lead to %s", e.From, e.To, e.To, e.From)
	}
}

// reportCycle finds one cycle inside a component and reports it at the edge
// that closes it.
func reportCycle(g *Graph, succ [][]*GraphEdge, comp []int, diags *diag.List) {
	in := map[int]bool{}
	for _, v := range comp {
		in[v] = true
	}
	start := slices.Min(comp)
	if len(comp) == 1 {
		self := slices.IndexFunc(succ[start], func(e *GraphEdge) bool { return e.To.index == start })
		if self < 0 {
			return
		}
	}
	// Breadth-first search from start back to start within the component.
	prev := map[int]*GraphEdge{}
	queue := []int{start}
	var closing *GraphEdge
	for len(queue) > 0 && closing == nil {
		v := queue[0]
		queue = queue[1:]
		for _, e := range succ[v] {
			w := e.To.index
			if w == start {
				closing = e
				break
			}
			if in[w] && prev[w] == nil {
				prev[w] = e
				queue = append(queue, w)
			}
		}
	}
	if closing == nil {
		return
	}
	path := []string{g.Nodes[start].Alias}
	for v := closing.From.index; v != start; v = prev[v].From.index {
		path = append(path, "")
		copy(path[2:], path[1:])
		path[1] = g.Nodes[v].Alias
	}
	path = append(path, g.Nodes[start].Alias)
	diags.Add(closing.At("to"), diag.DAG200, "remove one of these edges, or mark the edge that repeats work as a bounded loop (cycle: {maxIterations: N}) leaving a switch",
		"cycle: %s", strings.Join(path, " -> "))
}

// portTypes types the ports of control nodes from their inputs, in
// topological order, and checks every edge (DAG201) and forEach (CTRL011).
func portTypes(g *Graph, diags *diag.List) {
	incoming := make([][]*GraphEdge, len(g.Nodes))
	for _, e := range g.Edges {
		if !e.Back() {
			incoming[e.To.index] = append(incoming[e.To.index], e)
		}
	}
	for _, v := range topoOrder(g) {
		gn := g.Nodes[v]
		switch gn.Kind() {
		case KindSwitch, KindCheckpoint, KindSleep:
			if src := firstTyped(incoming[v]); src != nil {
				gn.In["in"] = src
				for _, p := range gn.Out {
					*p = *src
				}
			}
		case KindForEach:
			forEachTypes(gn, firstTyped(incoming[v]), diags)
		}
	}
	for _, e := range g.Edges {
		src, dst := e.From.Out[e.FromPort], e.To.In[e.ToPort]
		if !src.Typed || !dst.Typed {
			continue
		}
		report(diags, e.At("to"), diag.DAG201, fmt.Sprintf("%s -> %s", e.From, e.To),
			connectorspec.Compatible(src.Schema, dst.Schema))
	}
}

const maxMismatchesPerEdge = 5

// report turns schema mismatches into diagnostics, a few per edge.
func report(diags *diag.List, pos diag.Pos, code diag.Code, what string, ms []connectorspec.Mismatch) {
	for i, m := range ms {
		if i == maxMismatchesPerEdge {
			diags.Add(pos, code, "", "%s: %d more mismatches", what, len(ms)-i)
			return
		}
		diags.Add(pos, code, m.Fix, "%s: %s", what, m)
	}
}

// String names the node in messages.
func (n *GraphNode) String() string { return n.Alias }

func firstTyped(es []*GraphEdge) *Port {
	for _, e := range es {
		if p := e.From.Out[e.FromPort]; p.Typed {
			return p
		}
	}
	return nil
}

// forEachTypes checks the items field (CTRL011), the body's input against the
// element type (DAG201) and types the out port as {results: [body output]}.
func forEachTypes(gn *GraphNode, in *Port, diags *diag.List) {
	fe := gn.ForEach
	var elem *jsonschema.Schema
	if in != nil {
		gn.In["in"] = in
		items := fieldSchema(in.Schema, fe.Items)
		switch {
		case items == nil:
			diags.Add(fe.At("items"), diag.CTRL011, "name an array field of the forEach input", "forEach items %q is not a field of the input", fe.Items)
		case !slices.Contains(schemaTypes(items), "array"):
			diags.Add(fe.At("items"), diag.CTRL011, "name an array field of the forEach input",
				"forEach items %q is %s, not an array", fe.Items, strings.Join(schemaTypes(items), " or "))
		default:
			elem = deref(items).Items2020
		}
	}
	body := gn.Body
	if body == nil {
		return
	}
	bodyIn := body.In[bodyInputPort(body)]
	if elem != nil && bodyIn != nil && bodyIn.Typed {
		report(diags, fe.At("do"), diag.DAG201, fmt.Sprintf("%s element -> %s", gn.Alias, body.Alias),
			connectorspec.Compatible(elem, bodyIn.Schema))
	}
	if out := body.Out[bodyOutputPort(body)]; out != nil && out.Typed {
		gn.Out["out"] = &Port{Schema: resultsSchema(out.Schema), Typed: true}
	}
}

func bodyInputPort(n *GraphNode) string {
	if n.Spec != nil {
		return n.Spec.PrimaryInputPort()
	}
	return "in"
}

func bodyOutputPort(n *GraphNode) string {
	if n.Spec != nil {
		return n.Spec.PrimaryOutputPort()
	}
	return "out"
}

// resultsSchema is the schema of a forEach aggregate: {results: [elem]}.
func resultsSchema(elem *jsonschema.Schema) *jsonschema.Schema {
	arr, obj := new(jsonschema.Types), new(jsonschema.Types)
	arr.Add("array")
	obj.Add("object")
	results := &jsonschema.Schema{Types: arr, Items2020: elem}
	return &jsonschema.Schema{Types: obj, Properties: map[string]*jsonschema.Schema{"results": results}, Required: []string{"results"}}
}

func deref(s *jsonschema.Schema) *jsonschema.Schema {
	for i := 0; s != nil && s.Ref != nil && i < 32; i++ {
		s = s.Ref
	}
	return s
}

func schemaTypes(s *jsonschema.Schema) []string {
	s = deref(s)
	if s == nil || s.Types == nil {
		return nil
	}
	return s.Types.ToStrings()
}

// fieldSchema returns the schema of the property at a dotted path, or nil.
func fieldSchema(s *jsonschema.Schema, path string) *jsonschema.Schema {
	for _, seg := range strings.Split(path, ".") {
		s = deref(s)
		if s == nil {
			return nil
		}
		s = s.Properties[seg]
	}
	return s
}

// topoOrder returns node indexes so that every forward edge goes forward;
// nodes on cycles come last in file order.
func topoOrder(g *Graph) []int {
	indeg := make([]int, len(g.Nodes))
	succ := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		if e.Back() {
			continue
		}
		succ[e.From.index] = append(succ[e.From.index], e.To.index)
		indeg[e.To.index]++
	}
	var order, queue []int
	for v, d := range indeg {
		if d == 0 {
			queue = append(queue, v)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		order = append(order, v)
		for _, w := range succ[v] {
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	if len(order) < len(g.Nodes) {
		done := make([]bool, len(g.Nodes))
		for _, v := range order {
			done[v] = true
		}
		for v := range g.Nodes {
			if !done[v] {
				order = append(order, v)
			}
		}
	}
	return order
}

// overrides checks that overrides only tighten (EFFECT202, DET303).
func overrides(g *Graph, diags *diag.List) {
	for _, gn := range g.Nodes {
		o := gn.Overrides
		if o == nil || gn.Spec == nil {
			continue
		}
		if o.Effects != nil && *o.Effects < gn.Spec.Effects {
			diags.Add(o.At("effects"), diag.EFFECT202, fmt.Sprintf("remove the override or set it to %s or stronger", gn.Spec.Effects),
				"override effects %s is weaker than %s declares (%s)", *o.Effects, gn.Spec.ID, gn.Spec.Effects)
		}
		if o.Determinism != nil && *o.Determinism < gn.Spec.Determinism {
			diags.Add(o.At("determinism"), diag.DET303, fmt.Sprintf("remove the override or set it to %s or weaker", gn.Spec.Determinism),
				"override determinism %s is stronger than %s declares (%s)", *o.Determinism, gn.Spec.ID, gn.Spec.Determinism)
		}
	}
}

// retryOwners reports orchestrator retries on connectors that retry
// themselves (RETRY010).
func retryOwners(g *Graph, diags *diag.List) {
	for _, gn := range g.Nodes {
		if gn.Spec == nil || gn.OnError == nil || gn.OnError.Strategy != StrategyRetry {
			continue
		}
		if r := gn.Spec.Retry; r != nil && r.Owner == flowtype.RetryConnector {
			diags.Add(gn.OnError.At("strategy"), diag.RETRY010,
				"drop onError retry (the connector already retries) or use dead-letter, compensate or halt",
				"node %q retries in the orchestrator but connector %s retries itself: both sides would retry", gn.Alias, gn.Spec.ID)
		}
	}
}

// delivery checks what each edge's delivery guarantee relies on.
func delivery(g *Graph, diags *diag.List) {
	for _, e := range g.Edges {
		sink := e.To.Spec
		if sink == nil {
			continue
		}
		effectful := e.To.Effects() == flowtype.Effectful
		idem := sink.Idempotency
		hasKey := idem != nil && len(idem.Key) > 0
		if e.Delivery == flowtype.ExactlyOnce {
			if g.Flow.Policies.DedupeStore == "" {
				diags.Add(e.At("delivery"), diag.EXACT001, "bind one under policies: {dedupeStore: default}",
					"exactly-once edge %s -> %s has no dedupe store bound", e.From, e.To)
			}
			if effectful && !hasKey {
				diags.Add(e.At("delivery"), diag.EXACT005, fmt.Sprintf("give %s an idempotency key, or use AtLeastOnce", sink.ID),
					"exactly-once edge into %q, whose connector %s is not idempotent", e.To, sink.ID)
			}
		}
		if e.Delivery == flowtype.AtLeastOnce && effectful {
			switch {
			case !hasKey:
				diags.Add(e.At("to"), diag.IDEM020, fmt.Sprintf("give %s an idempotency key", sink.ID),
					"at-least-once edge into effectful %q: redeliveries cannot be recognised without an idempotency key", e.To)
			case idem.Scope == flowtype.ScopePartition && e.PartitionKey == "":
				diags.Add(e.At("to"), diag.IDEM020, "set partitionKey on the edge",
					"at-least-once edge into %q, whose key is partition-scoped, has no partition key", e.To)
			}
		}
		if effectful && hasKey {
			unstableKeyFields(e, idem.Key, diags)
		}
	}
}

// unstableKeyFields reports key fields fed by a BestEffort or worse producer
// unless the producer marks the field Strict or Stable (IDEM025).
func unstableKeyFields(e *GraphEdge, key []string, diags *diag.List) {
	producer := e.From
	if producer.Spec == nil || producer.Determinism() <= flowtype.Stable {
		return
	}
	out := producer.Out[e.FromPort]
	for _, field := range key {
		f := fieldSchema(out.Schema, field)
		if a, ok := connectorspec.AnnotationsOf(deref(f)); ok && a.Determinism != nil && *a.Determinism <= flowtype.Stable {
			continue
		}
		if a, ok := connectorspec.AnnotationsOf(f); ok && a.Determinism != nil && *a.Determinism <= flowtype.Stable {
			continue
		}
		diags.Add(e.At("from"), diag.IDEM025,
			fmt.Sprintf("mark %q x-determinism: Strict in %s's output if it echoes an input, or key on a stable field", field, producer.Spec.ID),
			"key field %q of %q comes from %q, which is %s", field, e.To, producer, producer.Determinism())
	}
}

// egress reports connectors none of whose hosts the flow's allowlist permits
// (EGRESS101). A flow without an allowlist permits every declared host.
func egress(g *Graph, diags *diag.List) {
	allow := g.Flow.Policies.Egress
	if len(allow) == 0 {
		return
	}
	for _, gn := range g.Nodes {
		if gn.Spec == nil || len(gn.Spec.Egress) == 0 {
			continue
		}
		if !slices.ContainsFunc(gn.Spec.Egress, func(h string) bool { return flowtype.EgressWithin(h, allow) }) {
			diags.Add(gn.At("uses"), diag.EGRESS101, fmt.Sprintf("add %s to policies.egress, or use another connector", gn.Spec.Egress[0]),
				"connector %s may contact only %s, none of which policies.egress allows", gn.Spec.ID, strings.Join(gn.Spec.Egress, ", "))
		}
	}
}

// compensation resolves and checks the compensators of the connectors
// the flow uses.
func compensation(g *Graph, diags *diag.List) {
	for _, gn := range g.Nodes {
		if gn.Spec != nil && g.loader != nil {
			diags.Append(g.loader.CheckCompensator(gn.Spec))
			if c := gn.Spec.Compensation; c != nil {
				gn.Undo, _ = g.loader.Catalog.Resolve(c.Connector)
			}
		}
	}
}
