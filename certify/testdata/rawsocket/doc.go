// Package rawsocket is a connector of the certification corpus.
package rawsocket
