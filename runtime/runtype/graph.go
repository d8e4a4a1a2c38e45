package runtype

import (
	"strings"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// NodeKind is what a flow node is.
type NodeKind string

// The kinds of flow node.
const (
	NodeTask       NodeKind = "task"
	NodeSwitch     NodeKind = "switch"
	NodeForEach    NodeKind = "forEach"
	NodeCheckpoint NodeKind = "checkpoint"
	NodeSubflow    NodeKind = "subflow"
	NodeSleep      NodeKind = "sleep"
)

// FlowGraph is one registered flow definition as a graph: its nodes in
// declaration order and its edges, for drawing and for reading what a
// job's activations carry.
type FlowGraph struct {
	FlowVersion
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is one node of a FlowGraph.
type GraphNode struct {
	Alias string   `json:"alias"`
	Kind  NodeKind `json:"kind"`
	// Connector is a task node's connector, id@version.
	Connector string           `json:"connector,omitempty"`
	Effects   flowtype.Effects `json:"effects,omitempty"`
	// Entry is set on the nodes a job starts at; Body names the forEach
	// body a forEach runs, Subflow the flow a subflow node starts.
	Entry       bool   `json:"entry,omitempty"`
	Body        string `json:"body,omitempty"`
	Subflow     string `json:"subflow,omitempty"`
	Compensated bool   `json:"compensated,omitempty"`
	// DataClass, when the connector declares data classes, returns the
	// x-data-class at path ("a.b", "items[]") of part ("params", "input"
	// or "output"), taking the nearest declared ancestor's; "" when none.
	DataClass func(part, path string) string `json:"-"`
}

// GraphEdge is one edge of a FlowGraph: From's output on Port goes to To.
type GraphEdge struct {
	From     string            `json:"from"`
	Port     string            `json:"port"`
	To       string            `json:"to"`
	Delivery flowtype.Delivery `json:"delivery"`
	// Loop, when above zero, marks the back edge of a loop and is its
	// bound on passes.
	Loop int `json:"loop,omitempty"`
}

// Sensitive reports whether values of data class must not be shown to
// someone reading a job: personal, financial, health and credential data
// and their subclasses ("pii.email"), and confidential data.
func Sensitive(class string) bool {
	top, _, _ := strings.Cut(class, ".")
	switch top {
	case "pii", "financial", "health", "credential", "confidential":
		return true
	}
	return false
}
