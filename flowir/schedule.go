package flowir

import (
	"errors"
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// InputJSON is the canonical JSON of the schedule's input ({} when none is
// written).
func (s *Schedule) InputJSON() ([]byte, error) {
	if s.Input.Value == nil {
		return []byte("{}"), nil
	}
	return strictyaml.CanonicalJSON(s.Input.JSON())
}

// schedules checks the flow's schedules (FMT006 for each problem): names
// that are present, unique and without slashes, cron expressions that
// parse, and, when the flow resolved without errors (so that its input
// schema is known), inputs that schema accepts.
func (r *resolver) schedules() {
	schemaKnown := !r.diags.HasErrors()
	seen := map[string]*Schedule{}
	for _, s := range r.g.Flow.Schedules {
		if s == nil {
			continue
		}
		switch {
		case s.Name == "" || strings.Contains(s.Name, "/"):
			r.diags.Add(s.At("name"), diag.FMT006, "name it with letters, digits, dots or dashes", "schedule name %q: want a name without slashes", s.Name)
		case seen[s.Name] != nil:
			r.diags.Add(s.At("name"), diag.FMT006, "rename one of the two schedules",
				"duplicate schedule %q (first at line %d)", s.Name, seen[s.Name].At("name").Line)
		default:
			seen[s.Name] = s
		}
		if _, err := cron.ParseStandard(s.Cron); err != nil {
			r.diags.Add(s.At("cron"), diag.FMT006, "use five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @every 90s",
				"schedule %s: cron %q: %v", s.Name, s.Cron, err)
		}
		input, err := s.InputJSON()
		if err != nil {
			r.diags.Add(s.At("input"), diag.FMT006, "write the input as a mapping", "schedule %s: input: %v", s.Name, err)
			continue
		}
		if schemaKnown {
			r.scheduleInput(s, input)
		}
	}
}

// scheduleInput reports where the flow's input schema refuses a
// schedule's input.
func (r *resolver) scheduleInput(s *Schedule, input []byte) {
	err := r.g.CheckInput(r.g.Flow.File, input)
	var refused *InputError
	if !errors.As(err, &refused) {
		return
	}
	for _, p := range refused.Problems {
		at := s.At("input")
		if pos := s.Input.PosOf(p.Pointer); p.Pointer != "" && pos.IsValid() {
			at = pos
		}
		msg := p.Path + ": " + p.Message
		if p.Node != "" {
			msg += fmt.Sprintf(" (input of %s)", p.Node)
		}
		r.diags.Add(at, diag.FMT006, "make the input match the flow's input schema", "schedule %s: input refused: %s", s.Name, msg)
	}
}
