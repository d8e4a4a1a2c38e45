// Package clockvalue is a connector of the certification corpus.
package clockvalue
