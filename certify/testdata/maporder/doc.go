// Package maporder is a connector of the certification corpus.
package maporder
