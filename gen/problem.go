package gen

import "errors"

// problem is something in a spec the generator cannot express, with the
// fix its diagnostic suggests: "" for the general advice of the caller.
// Fixes travel as data, never recovered from the wording of a message.
type problem struct {
	msg, fix string
}

// fixError is an error that knows the fix to suggest for it.
type fixError struct {
	err error
	fix string
}

func (e *fixError) Error() string { return e.err.Error() }
func (e *fixError) Unwrap() error { return e.err }

// withFix attaches fix to err.
func withFix(fix string, err error) error { return &fixError{err: err, fix: fix} }

// problemOf is err as a problem, with the fix it carries if any.
func problemOf(err error) problem {
	p := problem{msg: err.Error()}
	var fe *fixError
	if errors.As(err, &fe) {
		p.fix = fe.fix
	}
	return p
}
