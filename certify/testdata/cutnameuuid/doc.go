// Package cutnameuuid is a connector of the certification corpus.
package cutnameuuid
