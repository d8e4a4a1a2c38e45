// Package blobattempt is a connector of the certification corpus.
package blobattempt
