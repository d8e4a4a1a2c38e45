// Package readonlywrite is a connector of the certification corpus.
package readonlywrite
