// Package overridepost is a connector of the certification corpus.
package overridepost
