// Package piierror is a connector of the certification corpus.
package piierror
