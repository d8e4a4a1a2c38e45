// Package base64secret is a connector of the certification corpus.
package base64secret
