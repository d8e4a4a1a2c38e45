// Package httpclient is a connector of the certification corpus.
package httpclient
