// Package gooddryrun is a connector of the certification corpus.
package gooddryrun
