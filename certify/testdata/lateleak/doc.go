// Package lateleak is a connector of the certification corpus.
package lateleak
