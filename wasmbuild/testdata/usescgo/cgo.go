// Package usescgo is written in C.
package usescgo

// int answer(void) { return 42; }
import "C"

// Answer asks C.
func Answer() int { return int(C.answer()) }
