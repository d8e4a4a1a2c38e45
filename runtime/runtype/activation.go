// Package runtype is the vocabulary the engine and the node API share: job
// ids, activation ids with their one grammar, dimensional addresses, the
// states of jobs and activations, the failure kinds a result records, the
// sentinel errors callers branch on, the work stream and the crash points of
// the step protocol, the error taxonomy, a node's declaration (NodeInfo,
// RetryPolicy), the parts of a flow that hold no node code (edges, switches,
// forEach, subflows, checkpoints, budgets), and what the engine reports
// (JobStatus, Inspection, job listings). It is a leaf: it imports only
// flowtype, so the engine below package runtime, the store backends, tools
// and clients may all use it; package runtime re-exports what its users
// touch under the same names.
//
// An activation id is stored in keys and messages, so its text form is part
// of the on-disk format. The grammar is:
//
//	entry   node@               an entry node of the job
//	step    node@dim<from       node reached from node from, in dimension dim
//	join    node#join@dim       the join of the forEach node in dim
//	undo    <entry|step>#undo   the compensation of a completed activation
//
// Node names are flow aliases (identifiers: no '@', '<', '#' or '/'). A
// dimension is empty at the top level; each forEach element adds "/<index>"
// and each pass k of a loop back into a node adds "/<node>~<k>".
package runtype

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what an activation does in its job.
type Kind uint8

// Activation kinds.
const (
	// Entry is the activation of an entry node, started with the job.
	Entry Kind = iota + 1
	// Step is the activation of a node reached over an edge (forEach bodies
	// and loop passes included).
	Step
	// Join aggregates a forEach once all its elements have finished.
	Join
	// Undo runs the compensation of a completed activation.
	Undo
)

var kindNames = [...]string{Entry: "entry", Step: "step", Join: "join", Undo: "undo"}

// String is the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ActivationID identifies one activation within its job. The zero value is
// not a valid id; build ids with EntryOf, StepOf, JoinOf and UndoOf, or
// Parse their text.
type ActivationID struct {
	kind Kind
	node string
	dim  Dim
	from string
	// undone is the activation an Undo compensates (an Entry or Step).
	undone *ActivationID
}

// EntryOf is the activation of entry node node.
func EntryOf(node string) ActivationID { return ActivationID{kind: Entry, node: node} }

// StepOf is the activation of node in dimension dim, reached from node from.
func StepOf(node string, dim Dim, from string) ActivationID {
	return ActivationID{kind: Step, node: node, dim: dim, from: from}
}

// JoinOf is the join of forEach node node in dimension dim.
func JoinOf(node string, dim Dim) ActivationID {
	return ActivationID{kind: Join, node: node, dim: dim}
}

// UndoOf is the compensation of done, which must be an Entry or a Step.
func UndoOf(done ActivationID) (ActivationID, error) {
	if done.kind != Entry && done.kind != Step {
		return ActivationID{}, fmt.Errorf("%w: only an entry or a step can be undone, not %s %q", ErrBadActivationID, done.kind, done)
	}
	d := done
	return ActivationID{kind: Undo, node: done.node, dim: done.dim, undone: &d}, nil
}

// Kind is the activation's kind.
func (a ActivationID) Kind() Kind { return a.kind }

// Node is the flow node the activation runs (for an undo, the node whose
// compensation runs; for a join, the forEach node).
func (a ActivationID) Node() string { return a.node }

// Dim is the dimensional address the activation runs in.
func (a ActivationID) Dim() Dim { return a.dim }

// From is the predecessor node a step was reached from; empty for other
// kinds.
func (a ActivationID) From() string { return a.from }

// Undone is the activation an undo compensates; ok is false for other
// kinds.
func (a ActivationID) Undone() (id ActivationID, ok bool) {
	if a.undone == nil {
		return ActivationID{}, false
	}
	return *a.undone, true
}

const (
	joinMark = "#join@"
	undoMark = "#undo"
)

// String is the id's text form, as stored in keys and messages.
func (a ActivationID) String() string {
	switch a.kind {
	case Entry:
		return a.node + "@"
	case Step:
		return a.node + "@" + string(a.dim) + "<" + a.from
	case Join:
		return a.node + joinMark + string(a.dim)
	case Undo:
		return a.undone.String() + undoMark
	}
	return ""
}

// ErrBadActivationID is returned (wrapped) by Parse for text that is not an
// activation id.
var ErrBadActivationID = errors.New("not an activation id")

// Parse reads the text form String writes. Parse(a.String()) equals a for
// every valid id, and every text Parse accepts prints back unchanged.
func Parse(s string) (ActivationID, error) {
	bad := func(why string) (ActivationID, error) {
		return ActivationID{}, fmt.Errorf("%w: %q: %s", ErrBadActivationID, s, why)
	}
	if inner, ok := strings.CutSuffix(s, undoMark); ok {
		done, err := Parse(inner)
		if err != nil {
			return bad("the undone activation: " + err.Error())
		}
		return UndoOf(done)
	}
	if node, dim, ok := strings.Cut(s, joinMark); ok {
		if err := checkNode(node); err != nil {
			return bad(err.Error())
		}
		if err := Dim(dim).check(); err != nil {
			return bad(err.Error())
		}
		return JoinOf(node, Dim(dim)), nil
	}
	node, rest, ok := strings.Cut(s, "@")
	if !ok {
		return bad("no '@'")
	}
	if err := checkNode(node); err != nil {
		return bad(err.Error())
	}
	if rest == "" {
		return EntryOf(node), nil
	}
	dim, from, ok := strings.Cut(rest, "<")
	if !ok {
		return bad("no '<' before the predecessor")
	}
	if err := checkNode(from); err != nil {
		return bad("predecessor: " + err.Error())
	}
	if err := Dim(dim).check(); err != nil {
		return bad(err.Error())
	}
	return StepOf(node, Dim(dim), from), nil
}

// checkNode accepts a node alias: not empty, none of the characters the
// grammar uses.
func checkNode(node string) error {
	if node == "" {
		return errors.New("empty node name")
	}
	if i := strings.IndexAny(node, "@<#/~"); i >= 0 {
		return fmt.Errorf("node name %q contains %q", node, node[i])
	}
	return nil
}
