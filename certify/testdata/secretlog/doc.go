// Package secretlog is a connector of the certification corpus.
package secretlog
