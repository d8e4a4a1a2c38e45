// Package dnslookup is a connector of the certification corpus.
package dnslookup
