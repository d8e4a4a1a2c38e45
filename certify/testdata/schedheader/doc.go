// Package schedheader is a connector of the certification corpus.
package schedheader
