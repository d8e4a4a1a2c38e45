package connectorspec

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// schemaDocs loads the JSON Schema files a spec refers to, each once, with
// positions, and serves them to the JSON Schema compiler so that validation
// and position reporting see the same bytes.
type schemaDocs struct {
	docs    map[string]strictyaml.Raw // absolute path -> parsed document
	checked map[string]struct{}       // files whose $refs were checked
	diags   *diag.List
}

func newSchemaDocs(diags *diag.List) *schemaDocs {
	return &schemaDocs{docs: map[string]strictyaml.Raw{}, checked: map[string]struct{}{}, diags: diags}
}

// file returns the parsed document at path (as the user would write it:
// the spec's directory joined with the $ref), parsing it on first use. ok is
// false when the file is unparsable; parse errors are reported once.
func (s *schemaDocs) file(path string) (strictyaml.Raw, bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return strictyaml.Raw{}, false, err
	}
	if r, ok := s.docs[abs]; ok {
		return r, r.Value != nil, nil
	}
	data, err := strictyaml.ReadFile(path)
	if err != nil {
		return strictyaml.Raw{}, false, err
	}
	var r strictyaml.Raw
	_, ds := strictyaml.Unmarshal(path, data, &r)
	s.diags.Append(ds)
	if ds.HasErrors() {
		r.Value = nil
	}
	s.docs[abs] = r
	return r, r.Value != nil, nil
}

// Load implements jsonschema.URLLoader for file URLs; other schemes are
// refused so that validation never reaches the network.
func (s *schemaDocs) Load(rawURL string) (any, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "file" {
		return nil, fmt.Errorf("remote $ref %q is not allowed; copy the schema next to the spec", rawURL)
	}
	abs := filepath.FromSlash(u.Path)
	r, known := s.docs[abs]
	if !known {
		var ok bool
		if r, ok, err = s.file(abs); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("schema file %s has errors", abs)
		}
	}
	if r.Value == nil {
		return nil, fmt.Errorf("schema file %s has errors", r.File)
	}
	return r.JSON(), nil
}

// checkRefs reports every $ref in r that names a missing file (SCHEMA002),
// loading referenced files and checking theirs in turn. It reports whether all
// references resolved.
func (s *schemaDocs) checkRefs(r strictyaml.Raw, dir string) bool {
	ok := true
	walkMaps(r.Value, "", func(m map[string]any, ptr string) {
		ref, isStr := m["$ref"].(string)
		if !isStr || strings.HasPrefix(ref, "#") {
			return
		}
		filePart, _, _ := strings.Cut(ref, "#")
		if strings.Contains(filePart, "://") {
			ok = false
			s.diags.Add(r.PosOf(ptr+"/$ref"), diag.SCHEMA001, "copy the schema next to the spec and refer to it by relative path",
				"remote $ref %q is not allowed", ref)
			return
		}
		path := filepath.Join(dir, filepath.FromSlash(filePart))
		doc, loaded, err := s.file(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			ok = false
			s.diags.Add(r.PosOf(ptr+"/$ref"), diag.SCHEMA002, fmt.Sprintf("create %s or correct the path", path),
				"$ref file %q not found", ref)
		case err != nil:
			ok = false
			s.diags.Add(r.PosOf(ptr+"/$ref"), diag.SCHEMA002, "", "$ref file %q: %v", ref, err)
		case !loaded:
			ok = false
		default:
			if _, seen := s.checked[doc.File]; !seen {
				s.checked[doc.File] = struct{}{}
				ok = s.checkRefs(doc, filepath.Dir(path)) && ok
			}
		}
	})
	return ok
}

// walkMaps calls fn for every JSON object inside v, in a stable order, with its
// JSON Pointer.
func walkMaps(v any, ptr string, fn func(m map[string]any, ptr string)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x, ptr)
		for _, k := range sortedKeys(x) {
			walkMaps(x[k], ptr+"/"+strictyaml.PointerEscape(k), fn)
		}
	case []any:
		for i, e := range x {
			walkMaps(e, fmt.Sprintf("%s/%d", ptr, i), fn)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compileSchema compiles r, which was written in specFile under the given
// name ("inputs/in"), resolving relative $refs against the spec's directory.
func (s *schemaDocs) compileSchema(specFile, name string, r strictyaml.Raw) (*jsonschema.Schema, error) {
	abs, err := filepath.Abs(specFile)
	if err != nil {
		return nil, err
	}
	// The inline schema is registered under a name beside the spec so that its
	// relative $refs resolve against the spec's directory.
	loc := "file://" + filepath.ToSlash(filepath.Join(filepath.Dir(abs),
		"."+filepath.Base(abs)+"."+strings.ReplaceAll(name, "/", ".")+".json"))
	c := s.compiler()
	if err := c.AddResource(loc, r.JSON()); err != nil {
		return nil, err
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, s.schemaError(loc, name, r, err)
	}
	return sch, nil
}

// compiler returns a draft 2020-12 compiler that loads files through s and
// understands flowgen's annotations.
func (s *schemaDocs) compiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(s)
	c.RegisterVocabulary(annotationVocabulary)
	c.AssertVocabs()
	return c
}

// schemaProblem is one reason a schema or a value is invalid, positioned
// where the author must look.
type schemaProblem struct {
	Pos diag.Pos
	// Loc is the JSON pointer of the offending value ("" for the root).
	Loc string
	Msg string
}

// schemaError is a schema that does not compile, with every reason found.
type schemaError struct {
	problems []schemaProblem
}

func (e *schemaError) Error() string {
	msgs := make([]string, len(e.problems))
	for i, p := range e.problems {
		msgs[i] = p.Msg
	}
	return strings.Join(msgs, "; ")
}

// schemaError turns a compiler error into problems positioned in the inline
// schema r (registered as loc) or in the $ref file that holds them.
func (s *schemaDocs) schemaError(loc, name string, r strictyaml.Raw, err error) error {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return &schemaError{[]schemaProblem{{Pos: r.Pos, Msg: strings.ReplaceAll(err.Error(), loc, name)}}}
	}
	doc := r
	if u, perr := url.Parse(sve.URL); perr == nil && sve.URL != loc {
		if d, ok := s.docs[filepath.FromSlash(u.Path)]; ok {
			doc = d
		}
	}
	return &schemaError{validationProblems(doc, ve)}
}

// validationProblems lists the leaf causes of ve, each positioned at the
// value of v it is about.
func validationProblems(v strictyaml.Raw, ve *jsonschema.ValidationError) []schemaProblem {
	var out []schemaProblem
	for _, leaf := range Violations(ve) {
		ptr := ""
		for _, tok := range leaf.Location {
			ptr += "/" + strictyaml.PointerEscape(tok)
		}
		out = append(out, schemaProblem{Pos: v.PosOf(ptr), Loc: ptr, Msg: leaf.Message})
	}
	return out
}

// Violation is one leaf cause of a schema validation failure: where in the
// instance (JSON Pointer tokens) and why, in English.
type Violation struct {
	Location []string
	Message  string
}

// Violations lists the leaf causes of a jsonschema validation error, in
// the order the validator found them; nil for any other error, or nil.
func Violations(err error) []Violation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []Violation
	for _, leaf := range leaves(ve) {
		out = append(out, Violation{Location: leaf.InstanceLocation, Message: leaf.ErrorKind.LocalizedString(englishPrinter)})
	}
	return out
}

var englishPrinter = message.NewPrinter(language.English)

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, cause := range ve.Causes {
		out = append(out, leaves(cause)...)
	}
	return out
}

// CompileFile compiles the JSON Schema file at path, or the subschema at
// the JSON pointer fragment inside it ("" for the whole file), the way
// specs compile the schemas they refer to: with flowgen's annotations and
// relative $refs resolved from the file's directory. Compiled schemas carry
// the same Location as when a spec reaches them through a $ref, so
// generators can match the two.
func CompileFile(path, fragment string) (*jsonschema.Schema, error) {
	var diags diag.List
	docs := newSchemaDocs(&diags)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, ok, err := docs.file(abs); err != nil {
		return nil, err
	} else if !ok {
		return nil, diags.Err()
	}
	c := docs.compiler()
	loc := "file://" + filepath.ToSlash(abs)
	if fragment != "" {
		loc += "#" + fragment
	}
	return c.Compile(loc)
}
