// Package recognizer is a connector of the certification corpus.
package recognizer
