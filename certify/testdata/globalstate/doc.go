// Package globalstate is a connector of the certification corpus.
package globalstate
