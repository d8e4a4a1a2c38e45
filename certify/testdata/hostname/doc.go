// Package hostname is a connector of the certification corpus.
package hostname
