package runtype

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Dim is a dimensional address: where in the job's fan-outs and loop passes
// an activation runs. The top level is "". Each forEach element appends
// "/<index>"; pass k of a loop back into node n appends "/<n>~<k>".
type Dim string

// Element is the address of element i of a forEach started in d.
func (d Dim) Element(i int) Dim { return d + "/" + Dim(strconv.Itoa(i)) }

// Parent is d without its last segment ("" at the top level).
func (d Dim) Parent() Dim {
	if i := strings.LastIndexByte(string(d), '/'); i >= 0 {
		return d[:i]
	}
	return ""
}

// Index is the element index of d's last segment, or -1 when that segment
// is not a forEach element (the top level, or a loop pass).
func (d Dim) Index() int {
	i := strings.LastIndexByte(string(d), '/')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(string(d[i+1:]))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// Reenter is the address of the next pass of the loop that returns to node
// target, and that pass's number (1 for the first pass back). Pass k of a
// loop into target runs under "<base>/<target>~<k>", where base is where the
// loop was entered, so every pass (and everything it starts, nested loops
// and forEach elements included) has addresses of its own, and leaving a
// nested loop does not disturb the outer one's count.
func (d Dim) Reenter(target string) (Dim, int) {
	s := string(d)
	marker := "/" + target + "~"
	for i := strings.LastIndex(s, marker); i >= 0; i = strings.LastIndex(s[:i], marker) {
		rest := s[i+len(marker):]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		if k, err := strconv.Atoi(rest[:end]); err == nil && k > 0 {
			return Dim(s[:i] + marker + strconv.Itoa(k+1)), k + 1
		}
	}
	return Dim(s + marker + "1"), 1
}

// check accepts "" or a sequence of "/<index>" and "/<node>~<pass>"
// segments.
func (d Dim) check() error {
	if d == "" {
		return nil
	}
	s, ok := strings.CutPrefix(string(d), "/")
	if !ok {
		return fmt.Errorf("dimension %q does not start with '/'", d)
	}
	for seg := range strings.SplitSeq(s, "/") {
		if err := checkSegment(seg); err != nil {
			return fmt.Errorf("dimension %q: %w", d, err)
		}
	}
	return nil
}

func checkSegment(seg string) error {
	if node, pass, ok := strings.Cut(seg, "~"); ok {
		if err := checkNode(node); err != nil {
			return err
		}
		if k, err := strconv.Atoi(pass); err != nil || k < 1 || strconv.Itoa(k) != pass {
			return fmt.Errorf("loop pass %q is not a positive number", pass)
		}
		return nil
	}
	if n, err := strconv.Atoi(seg); err != nil || n < 0 || strconv.Itoa(n) != seg {
		return errors.New("segment " + strconv.Quote(seg) + " is neither an element index nor a loop pass")
	}
	return nil
}
