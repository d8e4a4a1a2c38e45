// Package cgofile is a connector of the certification corpus.
package cgofile
