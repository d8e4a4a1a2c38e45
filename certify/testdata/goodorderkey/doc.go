// Package goodorderkey is a connector of the certification corpus.
package goodorderkey
