// Package authleak is a connector of the certification corpus.
package authleak
