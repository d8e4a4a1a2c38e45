// Package settle leaves timers behind when Run returns.
package settle
