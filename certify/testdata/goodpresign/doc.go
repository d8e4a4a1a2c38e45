// Package goodpresign is a legitimate connector whose public output is a
// signature made with a secret: it changes wholly with the secret and
// carries nothing of it, so certification must not take it for a leak,
// nor fail its fixture, which only the author's secret value reproduces.
package goodpresign
