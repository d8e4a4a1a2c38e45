// Package spin is a connector of the certification corpus.
package spin
