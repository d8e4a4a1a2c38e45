// Package fakegenerated is a connector of the certification corpus.
package fakegenerated
