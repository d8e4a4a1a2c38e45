package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// writeInspection prints a job in words: what it is, where it stands,
// each activation, its result and errors, and what it waits for; raw adds
// the ledgers and every stored key.
func writeInspection(w io.Writer, in *runtime.Inspection, waiting []string, view inspectView) {
	st := in.Status
	flow := ""
	for _, en := range in.Entries {
		if en.Key == "meta" {
			var m struct {
				Flow    string `json:"flow"`
				Version string `json:"version"`
			}
			json.Unmarshal(en.Value, &m)
			flow = strings.TrimSpace(m.Flow + " " + m.Version)
		}
	}
	fmt.Fprintf(w, "job %s of %s: %s\n", in.Job, flow, stateWords(in))
	if !st.Started.IsZero() {
		fmt.Fprintf(w, "  started   %s\n", st.Started.UTC().Format(time.DateTime+" MST"))
	}
	if !st.Finished.IsZero() {
		fmt.Fprintf(w, "  finished  %s (after %s)\n", st.Finished.UTC().Format(time.DateTime+" MST"), st.Finished.Sub(st.Started).Round(time.Millisecond))
	}
	fmt.Fprintln(w, "activations, in flow order:")
	for _, v := range in.Tree {
		writeActivation(w, v, "  ", st.Started, view.raw)
	}
	if len(st.Result) > 0 {
		fmt.Fprintln(w, "result:")
		for _, node := range slices.Sorted(maps.Keys(st.Result)) {
			fmt.Fprintf(w, "  %s: %s\n", node, oneLine(st.Result[node]))
		}
	}
	if len(st.Compensated) > 0 {
		fmt.Fprintf(w, "compensated (undone, newest first): %s\n", strings.Join(st.Compensated, ", "))
	}
	if len(st.Errors) > 0 {
		fmt.Fprintln(w, "errors:")
		for _, e := range st.Errors {
			fmt.Fprintf(w, "  %s\n", firstLine(e))
		}
	}
	if len(waiting) > 0 {
		fmt.Fprintln(w, "waiting for a decision:")
		for _, node := range waiting {
			fmt.Fprintf(w, "  %s: flowgen signal --approve %s %s   (or --reject)\n", node, in.Job, node)
		}
	}
	if view.history {
		writeHistory(w, in.History)
	}
	if !view.raw {
		return
	}
	fmt.Fprintf(w, "ledgers: %s\n", in.Summary)
	fmt.Fprintf(w, "stored state:\n")
	entries := append([]runtime.InspectionEntry(nil), in.Entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	for _, en := range entries {
		switch {
		case en.Counter != nil && en.Words != "":
			fmt.Fprintf(w, "  %-40s %015d  %s\n", en.Key, *en.Counter, en.Words)
		case en.Counter != nil:
			fmt.Fprintf(w, "  %-40s %d\n", en.Key, *en.Counter)
		case en.Value != nil:
			fmt.Fprintf(w, "  %-40s %s\n", en.Key, oneLine(en.Value))
		default:
			fmt.Fprintf(w, "  %-40s %q\n", en.Key, en.Text)
		}
	}
}

// inspectView is what flowgen inspect prints beyond the job in words.
type inspectView struct {
	// raw adds the ledgers in words and every stored key.
	raw bool
	// history adds the job's events in time order.
	history bool
}

// writeHistory prints a job's events, each at its time after the first.
func writeHistory(w io.Writer, events []runtime.HistoryEvent) {
	if len(events) == 0 {
		fmt.Fprintln(w, "history: none recorded (a job from before histories)")
		return
	}
	fmt.Fprintf(w, "history (from %s):\n", events[0].At.UTC().Format(time.RFC3339Nano))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ev := range events {
		what := ev.Act
		switch {
		case ev.Attempt > 0 && !ev.Since.IsZero():
			what += fmt.Sprintf(" (attempt %d, ran %s)", ev.Attempt, ev.At.Sub(ev.Since).Round(time.Microsecond))
		case ev.Attempt > 0:
			what += fmt.Sprintf(" (attempt %d)", ev.Attempt)
		}
		if ev.Detail != "" {
			what = strings.TrimSpace(what + " " + firstLine(ev.Detail))
		}
		fmt.Fprintf(tw, "  +%s\t%s\t%s\n", ev.At.Sub(events[0].At).Round(time.Microsecond), ev.Event, what)
	}
	tw.Flush()
}

// stateWords is the job's state with what qualifies it.
func stateWords(in *runtime.Inspection) string {
	words := []string{string(in.Status.State)}
	for _, en := range in.Entries {
		switch en.Key {
		case "paused":
			words = append(words, "paused")
		case "tomb":
			words = append(words, "killed: "+en.Text)
		}
	}
	return strings.Join(words, ", ")
}

// writeActivation prints one activation and its forEach elements.
func writeActivation(w io.Writer, v *runtime.ActivationView, indent string, started time.Time, raw bool) {
	name := v.Node
	if v.Node == "" {
		name = v.Act
	}
	if d := dimWords(v.Dim); d != "" {
		name += " (" + d + ")"
	}
	if strings.Contains(v.Act, "#join@") {
		name += " (joining its elements)"
	}
	line := fmt.Sprintf("%s%-*s %-9s", indent, max(1, 32-len(indent)), name, v.State)
	var notes []string
	if v.Port != "" && v.Port != "out" {
		notes = append(notes, "-> "+v.Port)
	}
	if v.Attempts > 1 {
		notes = append(notes, fmt.Sprintf("%d attempts", v.Attempts))
	}
	if !v.Finished.IsZero() && !started.IsZero() {
		notes = append(notes, fmt.Sprintf("at +%s", v.Finished.Sub(started).Round(time.Millisecond)))
	}
	if v.Elements > 0 {
		counts := map[runtime.ActivationState]int{}
		for _, c := range v.Children {
			counts[c.State]++
		}
		var parts []string
		for _, state := range runtime.ActivationStates {
			if counts[state] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[state], state))
			}
		}
		notes = append(notes, fmt.Sprintf("forEach of %d: %s", v.Elements, strings.Join(parts, ", ")))
	}
	if raw && v.LedgerWords != "" {
		notes = append(notes, "["+v.LedgerWords+"]")
	}
	if len(notes) > 0 {
		line += "  " + strings.Join(notes, ", ")
	}
	if v.Error != "" {
		line += "\n" + indent + "    error: " + firstLine(v.Error)
	}
	fmt.Fprintln(w, line)
	for _, c := range v.Children {
		writeActivation(w, c, indent+"  ", started, raw)
	}
}

// dimWords says which run of a node a dimension names: "/2" is element 2
// of a forEach, "/poll~3" the third pass of a loop into poll.
func dimWords(dim string) string {
	var parts []string
	for _, seg := range strings.Split(strings.Trim(dim, "/"), "/") {
		if seg == "" {
			continue
		}
		if node, pass, ok := strings.Cut(seg, "~"); ok {
			parts = append(parts, fmt.Sprintf("pass %s of %s", pass, node))
		} else if _, err := strconv.Atoi(seg); err == nil {
			parts = append(parts, "element "+seg)
		} else {
			parts = append(parts, seg)
		}
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func oneLine(v json.RawMessage) string {
	s := strings.Join(strings.Fields(string(v)), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
