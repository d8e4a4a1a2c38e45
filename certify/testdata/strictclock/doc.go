// Package strictclock is a connector of the certification corpus.
package strictclock
