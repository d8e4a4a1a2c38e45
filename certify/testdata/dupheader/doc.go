// Package dupheader is a connector of the certification corpus.
package dupheader
