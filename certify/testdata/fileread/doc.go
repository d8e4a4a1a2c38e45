// Package fileread is a connector of the certification corpus.
package fileread
