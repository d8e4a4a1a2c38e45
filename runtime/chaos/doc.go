// Package chaos holds the multi-process chaos test of the runtime on
// PostgreSQL. It restarts the shared PostgreSQL server, so it is built only
// with the "chaos" tag and runs on its own (make chaos), never alongside
// other packages' tests.
package chaos
