// Package twopercall is a connector of the certification corpus.
package twopercall
