// Package readmodifywrite is a connector of the certification corpus.
package readmodifywrite
