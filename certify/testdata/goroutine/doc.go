// Package goroutine is a connector of the certification corpus.
package goroutine
