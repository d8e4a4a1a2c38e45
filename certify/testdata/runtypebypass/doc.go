// Package runtypebypass is a connector of the certification corpus.
package runtypebypass
