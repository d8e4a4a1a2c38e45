// Package defaultoff is a connector of the certification corpus.
package defaultoff
