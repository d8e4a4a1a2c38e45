// Package initsleep sleeps for a century in a package init function: its
// instance must still start within the start's deadline, or fail.
package initsleep
