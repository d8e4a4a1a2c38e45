package console

import (
	"encoding/json"
	"slices"

	"github.com/flowgen-dev/flowgen/runtime"
)

// masker shows a job's values with the fields its connectors classify
// as sensitive (runtime.Sensitive) replaced by their class, so a reader
// of the console sees where personal, financial, health or credential
// data is without seeing it. Without the job's flow graph there are no
// classes to go by and values show as stored.
type masker struct {
	graph *runtime.FlowGraph
}

// node returns the graph node of alias, nil when unknown.
func (m masker) node(alias string) *runtime.GraphNode {
	if m.graph == nil {
		return nil
	}
	i := slices.IndexFunc(m.graph.Nodes, func(n runtime.GraphNode) bool { return n.Alias == alias })
	if i < 0 {
		return nil
	}
	return &m.graph.Nodes[i]
}

// kind is the kind of alias's node, "" when unknown.
func (m masker) kind(alias string) string {
	if n := m.node(alias); n != nil {
		return string(n.Kind)
	}
	return ""
}

// output shows the output of an activation of alias.
func (m masker) output(alias string, raw json.RawMessage) shown {
	var classes []func(string, string) string
	if n := m.node(alias); n != nil && n.DataClass != nil {
		classes = append(classes, n.DataClass)
	}
	return mask(raw, "output", classes)
}

// input shows the job's input, which every entry node receives: a field
// is masked when any entry node's connector classifies it sensitive.
func (m masker) input(raw json.RawMessage) shown {
	var classes []func(string, string) string
	if m.graph != nil {
		for _, n := range m.graph.Nodes {
			if n.Entry && n.DataClass != nil {
				classes = append(classes, n.DataClass)
			}
		}
	}
	return mask(raw, "input", classes)
}

// mask indents raw with every value whose class (by any of classes, for
// part) is sensitive replaced by "[class]".
func mask(raw json.RawMessage, part string, classes []func(part, path string) string) shown {
	if len(raw) == 0 {
		return shown{}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return shown{Text: string(raw)}
	}
	var s shown
	v = maskValue(v, "", part, classes, &s.Masked)
	b, _ := json.MarshalIndent(v, "", "  ")
	s.Text = string(b)
	return s
}

func maskValue(v any, path, part string, classes []func(string, string) string, masked *int) any {
	if path != "" {
		for _, classOf := range classes {
			if class := classOf(part, path); runtime.Sensitive(class) {
				*masked++
				return "[" + class + "]"
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskValue(e, joinPath(path, k), part, classes, masked)
		}
	case []any:
		for i, e := range x {
			x[i] = maskValue(e, path+"[]", part, classes, masked)
		}
	}
	return v
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
