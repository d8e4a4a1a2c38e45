// Package piimasked is a connector that "masks" a pii email into a
// public field with a reversible transformation (ROT13 of the part
// before the @), which no search for the value in its known encodings
// finds; only varying the value shows that it flows there.
package piimasked
