// Package goodoncetable is a connector of the certification corpus.
package goodoncetable
