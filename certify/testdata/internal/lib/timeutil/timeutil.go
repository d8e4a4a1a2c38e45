// Package timeutil is a third-party-style helper library the corpus
// connectors depend on; its clock read is as reachable as their own.
package timeutil

import "time"

// Today is the current date.
func Today() string { return time.Now().Format("2006-01-02") }
