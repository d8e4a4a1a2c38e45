// Package kvappend is a connector of the certification corpus.
package kvappend
