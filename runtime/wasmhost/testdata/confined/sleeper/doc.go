// Package sleeper reads the clock capability around a sleep, for the
// test that a host which skips sleeps still moves that clock by them.
package sleeper
