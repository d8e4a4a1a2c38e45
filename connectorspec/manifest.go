package connectorspec

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// Manifest renders the spec as canonical JSON with every schema file it
// refers to bundled under $defs: the self-contained description of a
// connector that generated code embeds and certification and the registry
// read without the schema files.
func Manifest(s *Spec) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	dir := filepath.Dir(s.File)
	bundleRoot := func(schema any) (any, error) {
		b := &bundler{defs: map[string]any{}, keys: map[string]string{}}
		out, err := b.walk(schema, dir, "")
		if err != nil {
			return nil, err
		}
		if m, ok := out.(map[string]any); ok && len(b.defs) > 0 {
			defs, _ := m["$defs"].(map[string]any)
			if defs == nil {
				defs = map[string]any{}
			}
			for k, v := range b.defs {
				defs[k] = v
			}
			m["$defs"] = defs
		}
		return out, nil
	}
	if p, ok := doc["params"]; ok {
		if doc["params"], err = bundleRoot(p); err != nil {
			return nil, err
		}
	}
	for _, group := range []string{"inputs", "outputs"} {
		ports, _ := doc[group].(map[string]any)
		for name, schema := range ports {
			if ports[name], err = bundleRoot(schema); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", group, name, err)
			}
		}
	}
	return strictyaml.CanonicalJSON(doc)
}

// bundler inlines file $refs as $defs entries keyed by file name.
type bundler struct {
	defs map[string]any
	keys map[string]string // absolute file -> $defs key
}

// walk copies v, rewriting $refs: a ref to a file becomes a ref into $defs;
// a local ref (#...) inside a bundled file (self != "") is re-rooted under
// that file's $defs entry.
func (b *bundler) walk(v any, dir, self string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if k == "$ref" {
				if ref, ok := val.(string); ok {
					r, err := b.ref(ref, dir, self)
					if err != nil {
						return nil, err
					}
					out[k] = r
					continue
				}
			}
			w, err := b.walk(val, dir, self)
			if err != nil {
				return nil, err
			}
			out[k] = w
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			w, err := b.walk(e, dir, self)
			if err != nil {
				return nil, err
			}
			out[i] = w
		}
		return out, nil
	}
	return v, nil
}

func (b *bundler) ref(ref, dir, self string) (string, error) {
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" {
		if self == "" {
			return ref, nil
		}
		return "#/$defs/" + self + frag, nil
	}
	abs, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		return "", err
	}
	key, seen := b.keys[abs]
	if !seen {
		key = strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
		for n := 2; b.defs[key] != nil; n++ {
			key = fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs)), n)
		}
		b.keys[abs] = key
		b.defs[key] = true // reserve against recursion
		data, err := strictyaml.ReadFile(abs)
		if err != nil {
			return "", err
		}
		var r strictyaml.Raw
		if _, diags := strictyaml.Unmarshal(abs, data, &r); diags.HasErrors() {
			return "", diags.Err()
		}
		body, err := b.walk(r.JSON(), filepath.Dir(abs), key)
		if err != nil {
			return "", err
		}
		b.defs[key] = body
	}
	return "#/$defs/" + key + frag, nil
}
