// Package spin misbehaves on request, for the confinement tests: it
// spins forever, allocates without end, panics, exits or returns a
// response larger than a module may.
package spin
