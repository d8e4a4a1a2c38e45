// Package secondlost is a connector of the certification corpus.
package secondlost
