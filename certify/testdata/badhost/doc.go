// Package badhost is a connector of the certification corpus.
package badhost
