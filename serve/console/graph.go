package console

import (
	"fmt"
	"slices"

	"github.com/flowgen-dev/flowgen/runtime"
)

// A flow's drawing is laid out in layers from left to right: a node's
// layer is the longest path to it from an entry node over the edges that
// are not loop back edges, a forEach body one layer after its forEach.
// Within a layer nodes keep their declaration order. Edges are curves
// from the right side of one box to the left side of the next; a back
// edge arcs under the boxes. No JavaScript draws anything: the page is
// the SVG the server wrote.
const (
	boxWidth  = 190
	boxHeight = 54
	gapX      = 170
	gapY      = 34
	margin    = 24
)

// drawing is a flow graph laid out for its SVG.
type drawing struct {
	Width, Height int
	Nodes         []drawnNode
	Edges         []drawnEdge
}

// drawnNode is a node's box.
type drawnNode struct {
	runtime.GraphNode
	X, Y, W, H int
	// Sub is the second line: the connector, or what the node does.
	Sub string
}

// drawnEdge is an edge's curve and label.
type drawnEdge struct {
	runtime.GraphEdge
	Path           string
	LabelX, LabelY int
	Label          string
	// Runs marks the link of a forEach to its body, which is no edge.
	Runs bool
}

// layout lays g out.
func layout(g runtime.FlowGraph) drawing {
	index := map[string]int{}
	for i, n := range g.Nodes {
		index[n.Alias] = i
	}
	layer := make([]int, len(g.Nodes))
	indegree := make([]int, len(g.Nodes))
	next := make([][]int, len(g.Nodes))
	link := func(from, to int) {
		next[from] = append(next[from], to)
		indegree[to]++
	}
	for _, e := range g.Edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		if okf && okt && e.Loop == 0 {
			link(f, t)
		}
	}
	for i, n := range g.Nodes {
		if b, ok := index[n.Body]; ok && n.Body != "" {
			link(i, b)
		}
	}
	var queue []int
	for i := range g.Nodes {
		if indegree[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range next[i] {
			layer[j] = max(layer[j], layer[i]+1)
			if indegree[j]--; indegree[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	rows := map[int]int{}
	d := drawing{}
	for i, n := range g.Nodes {
		x := margin + layer[i]*(boxWidth+gapX)
		y := margin + rows[layer[i]]*(boxHeight+gapY)
		rows[layer[i]]++
		d.Nodes = append(d.Nodes, drawnNode{GraphNode: n, X: x, Y: y, W: boxWidth, H: boxHeight, Sub: subtitle(n)})
		d.Width = max(d.Width, x+boxWidth+margin)
		d.Height = max(d.Height, y+boxHeight+margin)
	}
	under := d.Height // back edges arc below every box
	for _, e := range g.Edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		if !okf || !okt {
			continue
		}
		d.Edges = append(d.Edges, connect(d.Nodes[f], d.Nodes[t], e, under, false))
	}
	for i, n := range g.Nodes {
		if b, ok := index[n.Body]; ok && n.Body != "" {
			d.Edges = append(d.Edges, connect(d.Nodes[i], d.Nodes[b], runtime.GraphEdge{From: n.Alias, Port: "each element", To: n.Body}, under, true))
		}
	}
	if slices.ContainsFunc(d.Edges, func(e drawnEdge) bool { return e.Loop > 0 }) {
		d.Height += 2 * gapY
	}
	return d
}

// connect draws the edge e from box a to box b.
func connect(a, b drawnNode, e runtime.GraphEdge, under int, runs bool) drawnEdge {
	de := drawnEdge{GraphEdge: e, Runs: runs, Label: edgeLabel(e, runs)}
	if b.X > a.X { // forward
		x1, y1 := a.X+a.W, a.Y+a.H/2
		x2, y2 := b.X, b.Y+b.H/2
		mid := (x1 + x2) / 2
		de.Path = fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, mid, y1, mid, y2, x2-2, y2)
		de.LabelX, de.LabelY = mid, (y1+y2)/2-6
		return de
	}
	x1, y1 := a.X+a.W/2, a.Y+a.H
	x2, y2 := b.X+b.W/2, b.Y+b.H
	low := under + gapY
	de.Path = fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, x1, low, x2, low, x2, y2+2)
	de.LabelX, de.LabelY = (x1+x2)/2, low-4
	return de
}

// edgeLabel is what an edge's label says: its port when that is not the
// plain "out", its delivery guarantee, and a loop's bound.
func edgeLabel(e runtime.GraphEdge, runs bool) string {
	if runs {
		return "each element"
	}
	label := e.Delivery.String()
	if e.Port != "" && e.Port != "out" {
		label = e.Port + " · " + label
	}
	if e.Loop > 0 {
		label += fmt.Sprintf(" · loop ≤%d", e.Loop)
	}
	return label
}

// subtitle is a node box's second line.
func subtitle(n runtime.GraphNode) string {
	switch n.Kind {
	case runtime.NodeTask:
		s := n.Connector
		if n.Effects.String() != "" {
			s += " · " + n.Effects.String()
		}
		return s
	case runtime.NodeSubflow:
		return "subflow " + n.Subflow
	case runtime.NodeForEach:
		return "for each → " + n.Body
	}
	return string(n.Kind)
}
