package wasmhost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// maxOutput bounds what a module may write to its standard streams in one
// activation (and in its initialization): past it, writes fail and are
// dropped, so that one write host call (a writev of ten thousand iovecs
// over one buffer, say) costs the host at most this much, however the
// module phrases it.
const maxOutput = 1 << 20

// errOutputLimit and errStopped are what a write past the budget, or
// after the activation must stop, returns to the module (EIO).
var (
	errOutputLimit = errors.New("wasmhost: output limit reached")
	errStopped     = errors.New("wasmhost: the activation is over")
)

// output collects what an instance writes to its standard output and
// error, a line at a time.
type output struct {
	inst *instance
	buf  map[Stream]*bytes.Buffer
	// written counts the bytes of the current activation (or of the
	// initialization); dropped is set once the budget was reported.
	written int
	dropped bool
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
	o := w.o
	if act := o.inst.act; act != nil && act.rc.Err() != nil {
		return 0, errStopped
	}
	var err error
	if o.written+len(p) > maxOutput {
		p, err = p[:maxOutput-o.written], errOutputLimit
		if !o.dropped {
			o.dropped = true
			o.inst.m.host.report(o.inst, EventOutput, fmt.Sprintf("more than %d bytes written to standard output and error; the rest is dropped", maxOutput))
		}
	}
	o.written += len(p)
	b := o.buf[w.s]
	for rest := p; len(rest) > 0; {
		line, more, complete := bytes.Cut(rest, []byte{'\n'})
		b.Write(line)
		rest = more
		for b.Len() >= maxLine {
			o.cut(w.s, b)
		}
		if complete {
			o.emit(w.s, b.Bytes())
			b.Reset()
		}
	}
	return len(p), err
}

// cut emits the first maxLine bytes of a line too long for one, or fewer,
// so that no value redaction replaces is split between two lines; the
// rest stays in b.
func (o *output) cut(s Stream, b *bytes.Buffer) {
	data := b.Bytes()
	end := maxLine
	for moved := true; moved; {
		moved = false
		for _, v := range o.inst.sensitive() {
			// Only an occurrence starting in the window can cross the cut.
			from := max(0, end-len(v.v)+1)
			if i := bytes.Index(data[from:min(len(data), end+len(v.v)-1)], []byte(v.v)); i >= 0 && from+i < end {
				end, moved = from+i, true
			}
		}
	}
	if end == 0 { // a value as long as a line: cut after it instead
		end = maxLine
	}
	o.emit(s, data[:end])
	rest := slices.Clone(data[end:])
	b.Reset()
	b.Write(rest)
}

// flush emits what is left of each stream's last line and starts the
// next activation's budget.
func (o *output) flush() {
	for _, s := range []Stream{Stdout, Stderr} {
		if b := o.buf[s]; b.Len() > 0 {
			o.emit(s, b.Bytes())
			b.Reset()
		}
	}
	o.written, o.dropped = 0, false
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
	h.log.Info(redact(string(line), inst.sensitive()), "connector", inst.m.info.ID, "key", key, "stream", string(s))
}

// minRedacted is the shortest value redaction replaces: shorter ones
// would blank out ordinary words.
const minRedacted = 4

// sensitiveValue is a value redaction replaces, and the class it is
// replaced by.
type sensitiveValue struct{ v, class string }

// sensitive returns the values the running activation's output must not
// show: its secrets and every string or number of its input classified
// anything but public, longest first (so that a value containing another
// is replaced whole). It is worked out once an activation, again when a
// secret is added.
func (inst *instance) sensitive() []sensitiveValue {
	act := inst.act
	if act == nil {
		return nil
	}
	if act.sensitive != nil && act.sensitiveSecrets == len(act.secrets) {
		return act.sensitive
	}
	values := []sensitiveValue{}
	for _, s := range act.secrets {
		values = append(values, sensitiveValue{s, "secret"})
	}
	if info := inst.m.info; info.DataClass != nil {
		var doc any
		if json.Unmarshal(act.input, &doc) == nil {
			walkLeaves(doc, "", func(path, v string) {
				if c := info.DataClass("input", path); c != "" && c != "public" {
					values = append(values, sensitiveValue{v, c})
				}
			})
		}
	}
	values = slices.DeleteFunc(values, func(v sensitiveValue) bool { return len(v.v) < minRedacted })
	slices.SortFunc(values, func(a, b sensitiveValue) int { return len(b.v) - len(a.v) })
	act.sensitive, act.sensitiveSecrets = values, len(act.secrets)
	return values
}

// redact replaces in line every sensitive value.
func redact(line string, values []sensitiveValue) string {
	for _, v := range values {
		line = strings.ReplaceAll(line, v.v, "[redacted "+v.class+"]")
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
