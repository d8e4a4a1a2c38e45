package connectorspec

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Annotations are flowgen's JSON Schema keywords on one (sub)schema:
// x-data-class, which says what kind of data a value holds, and
// x-determinism, which says how reproducible the value is; plus the standard
// format and contentEncoding keywords, for generators.
type Annotations struct {
	DataClass string
	// Format and ContentEncoding repeat the standard keywords, which the
	// compiled schema keeps only when it asserts them; generators read them
	// here to choose Go types (date-time, byte, base64).
	Format, ContentEncoding string
	// Determinism is nil when x-determinism is not written.
	Determinism *flowtype.Determinism
}

// Validate accepts every instance: annotations describe, they do not constrain.
func (Annotations) Validate(*jsonschema.ValidatorContext, any) {}

// AnnotationsOf returns the annotations written on s itself (not following
// $ref), and whether there were any.
func AnnotationsOf(s *jsonschema.Schema) (Annotations, bool) {
	if s == nil {
		return Annotations{}, false
	}
	for _, ext := range s.Extensions {
		if a, ok := ext.(*Annotations); ok {
			return *a, true
		}
	}
	return Annotations{}, false
}

// annotationVocabulary compiles x-data-class and x-determinism into
// Annotations so that checks and generators read them from compiled schemas,
// with $refs already resolved.
var annotationVocabulary = &jsonschema.Vocabulary{
	URL: "https://flowgen.dev/vocab/annotations",
	Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
		cls, hasCls := obj["x-data-class"]
		det, hasDet := obj["x-determinism"]
		format, _ := obj["format"].(string)
		encoding, _ := obj["contentEncoding"].(string)
		if !hasCls && !hasDet && format == "" && encoding == "" {
			return nil, nil
		}
		a := Annotations{Format: format, ContentEncoding: encoding}
		if hasCls {
			s, ok := cls.(string)
			if !ok {
				return nil, fmt.Errorf("x-data-class must be a string, got %v", cls)
			}
			a.DataClass = s
		}
		if hasDet {
			s, ok := det.(string)
			var d flowtype.Determinism
			if !ok {
				return nil, fmt.Errorf("x-determinism must be a string, got %v", det)
			}
			if err := d.UnmarshalText([]byte(s)); err != nil {
				return nil, fmt.Errorf("x-determinism: %v", err)
			}
			a.Determinism = &d
		}
		return &a, nil
	},
}
