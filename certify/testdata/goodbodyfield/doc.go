// Package goodbodyfield is a connector of the certification corpus.
package goodbodyfield
