package flowir

import (
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowtype"
)

// GraphNode is a node with what it resolved to.
type GraphNode struct {
	*Node
	// Spec is the connector a KindConnector node calls (nil if unresolved).
	Spec *connectorspec.Spec
	// Confined is the pull record of a connector node that runs confined,
	// as its certified module (nil: the node runs natively).
	Confined *connectorspec.Pulled
	// Undo is the compensator of a connector node whose spec declares one,
	// resolved in the flow's connectors (nil if none, or unresolved).
	Undo *connectorspec.Spec
	// Child is the flow a KindSubflow node runs (nil if unresolved).
	Child *Graph
	// In and Out are the node's ports by name.
	In, Out map[string]*Port
	// Body is the node a forEach runs per element; BodyOf is the reverse.
	Body, BodyOf *GraphNode

	index int
}

// Port is a node port and the schema of the values crossing it. Ports of
// control nodes get their schema from what flows into them.
type Port struct {
	Schema *jsonschema.Schema
	// Typed is false for ports whose values are not described (inline
	// functions, or control nodes whose input could not be typed).
	Typed bool
}

// GraphEdge is an edge with resolved endpoints.
type GraphEdge struct {
	*Edge
	From, To         *GraphNode
	FromPort, ToPort string
}

// Back reports whether the edge is a loop's back edge (Edge.Cycle): the
// graph without back edges is acyclic.
func (e *GraphEdge) Back() bool { return e.Cycle != nil }

// Effects is the node's effective effects class: the connector's, tightened
// by overrides.
func (n *GraphNode) Effects() flowtype.Effects {
	if n.Overrides != nil && n.Overrides.Effects != nil {
		return *n.Overrides.Effects
	}
	if n.Spec != nil {
		return n.Spec.Effects
	}
	return flowtype.Pure
}

// Determinism is the node's effective determinism.
func (n *GraphNode) Determinism() flowtype.Determinism {
	if n.Overrides != nil && n.Overrides.Determinism != nil {
		return *n.Overrides.Determinism
	}
	if n.Spec != nil {
		return n.Spec.Determinism
	}
	return flowtype.Strict
}
