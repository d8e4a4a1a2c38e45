package wasmhost

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Stream is the standard stream a module wrote a line to.
type Stream string

// The streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// maxLine bounds a line of module output; a longer one is cut there.
const maxLine = 16 << 10

// output collects what an instance writes to its standard output and
// error, a line at a time.
type output struct {
	inst *instance
	buf  map[Stream]*bytes.Buffer
}

func newOutput(inst *instance) *output {
	return &output{inst: inst, buf: map[Stream]*bytes.Buffer{Stdout: {}, Stderr: {}}}
}

type streamWriter struct {
	o *output
	s Stream
}

func (o *output) stdout() io.Writer { return streamWriter{o, Stdout} }
func (o *output) stderr() io.Writer { return streamWriter{o, Stderr} }

func (w streamWriter) Write(p []byte) (int, error) {
	b := w.o.buf[w.s]
	for _, c := range p {
		if c == '\n' || b.Len() >= maxLine {
			w.o.emit(w.s, b.Bytes())
			b.Reset()
			if c == '\n' {
				continue
			}
		}
		b.WriteByte(c)
	}
	return len(p), nil
}

// flush emits what is left of each stream's last line.
func (o *output) flush() {
	for _, s := range []Stream{Stdout, Stderr} {
		if b := o.buf[s]; b.Len() > 0 {
			o.emit(s, b.Bytes())
			b.Reset()
		}
	}
}

// emit hands a line to Options.Output as it is, or logs it with the
// activation's secret values and classified input values replaced.
func (o *output) emit(s Stream, line []byte) {
	h, inst := o.inst.m.host, o.inst
	key := ""
	if inst.act != nil {
		key = inst.act.rc.IdempotencyKey()
	}
	if h.opts.Output != nil {
		h.opts.Output(inst.m.info.ID, key, s, slices.Clone(line))
		return
	}
	h.log.Info(redact(string(line), inst.act, inst.m.info), "connector", inst.m.info.ID, "key", key, "stream", string(s))
}

// minRedacted is the shortest value redaction replaces: shorter ones
// would blank out ordinary words.
const minRedacted = 4

// redact replaces in line the values of act's secrets and every string
// or number of its input classified anything but public.
func redact(line string, act *activation, info runtime.NodeInfo) string {
	if act == nil {
		return line
	}
	type value struct{ v, class string }
	var values []value
	for _, s := range act.secrets {
		values = append(values, value{s, "secret"})
	}
	if info.DataClass != nil {
		var doc any
		if json.Unmarshal(act.input, &doc) == nil {
			walkLeaves(doc, "", func(path, v string) {
				if c := info.DataClass("input", path); c != "" && c != "public" {
					values = append(values, value{v, c})
				}
			})
		}
	}
	// Longest first, so that a value containing another is replaced whole.
	slices.SortFunc(values, func(a, b value) int { return len(b.v) - len(a.v) })
	for _, v := range values {
		if len(v.v) >= minRedacted {
			line = strings.ReplaceAll(line, v.v, "[redacted "+v.class+"]")
		}
	}
	return line
}

// walkLeaves calls fn with the path (runtime.PathJoin's form) and text of
// every string and number below v.
func walkLeaves(v any, path string, fn func(path, text string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			walkLeaves(e, runtime.PathJoin(path, k), fn)
		}
	case []any:
		for i, e := range v {
			walkLeaves(e, runtime.PathIndex(path, i), fn)
		}
	case string:
		fn(path, v)
	case float64:
		b, _ := json.Marshal(v)
		fn(path, string(b))
	}
}
