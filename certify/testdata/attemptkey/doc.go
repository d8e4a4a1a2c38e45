// Package attemptkey is a connector of the certification corpus.
package attemptkey
