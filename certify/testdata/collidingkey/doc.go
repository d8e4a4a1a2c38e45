// Package collidingkey is a connector of the certification corpus.
package collidingkey
