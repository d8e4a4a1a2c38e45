// Package dupbodyfield is a connector of the certification corpus.
package dupbodyfield
