// Package initenv is a connector of the certification corpus.
package initenv
