// Package goodtimestamp is a connector of the certification corpus.
package goodtimestamp
