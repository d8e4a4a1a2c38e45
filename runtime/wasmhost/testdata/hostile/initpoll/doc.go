// Package initpoll makes, in a package init function, one poll_oneoff
// call that waits on no clock: its instance must still start within the
// start's deadline, or fail.
package initpoll
