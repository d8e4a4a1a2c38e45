package flowir

import (
	"fmt"
	"slices"
	"strings"
)

// Aggregate is a forEach aggregation policy. The zero value is AggregateAll.
type Aggregate string

// Aggregation policies.
const (
	AggregateAll    Aggregate = ""
	AggregateAny    Aggregate = "any"
	AggregateQuorum Aggregate = "quorum"
)

// EnumValues lists the accepted spellings.
func (Aggregate) EnumValues() []string { return []string{"all", "any", "quorum"} }

// UnmarshalText accepts all, any or quorum.
func (a *Aggregate) UnmarshalText(b []byte) error {
	return oneOf(string(b), "aggregate", Aggregate("").EnumValues(), func(s string) {
		if s == "all" {
			s = ""
		}
		*a = Aggregate(s)
	})
}

// MarshalText writes all for the zero value.
func (a Aggregate) MarshalText() ([]byte, error) {
	if a == AggregateAll {
		return []byte("all"), nil
	}
	return []byte(a), nil
}

// Strategy is an error-handling strategy.
type Strategy string

// Error-handling strategies.
const (
	StrategyRetry      Strategy = "retry"
	StrategyDeadLetter Strategy = "dead-letter"
	StrategyCompensate Strategy = "compensate"
	StrategyHalt       Strategy = "halt"
)

// EnumValues lists the accepted spellings.
func (Strategy) EnumValues() []string { return []string{"retry", "dead-letter", "compensate", "halt"} }

// UnmarshalText accepts one of EnumValues.
func (s *Strategy) UnmarshalText(b []byte) error {
	return oneOf(string(b), "error strategy", Strategy("").EnumValues(), func(v string) { *s = Strategy(v) })
}

// CompensationFailure is what a failed job's compensation chain does when
// a compensation fails. The zero value continues.
type CompensationFailure string

// EnumValues lists the accepted spellings.
func (CompensationFailure) EnumValues() []string {
	return []string{"continue", "halt", "retry", "park"}
}

// UnmarshalText accepts one of EnumValues.
func (c *CompensationFailure) UnmarshalText(b []byte) error {
	return oneOf(string(b), "compensation failure policy", CompensationFailure("").EnumValues(), func(v string) { *c = CompensationFailure(v) })
}

// Overlap is what a schedule's tick does while the job of the tick before
// still runs. The zero value skips it.
type Overlap string

// EnumValues lists the accepted spellings.
func (Overlap) EnumValues() []string { return []string{"skip", "buffer", "allow"} }

// UnmarshalText accepts one of EnumValues.
func (o *Overlap) UnmarshalText(b []byte) error {
	return oneOf(string(b), "schedule overlap", Overlap("").EnumValues(), func(v string) { *o = Overlap(v) })
}

// OnFull is what a full edge buffer does. The zero value blocks the sender.
type OnFull string

// EnumValues lists the accepted spellings.
func (OnFull) EnumValues() []string { return []string{"block", "drop-oldest", "dead-letter"} }

// UnmarshalText accepts one of EnumValues.
func (o *OnFull) UnmarshalText(b []byte) error {
	return oneOf(string(b), "onFull", OnFull("").EnumValues(), func(v string) { *o = OnFull(v) })
}

func oneOf(s, what string, allowed []string, set func(string)) error {
	if slices.Contains(allowed, s) {
		set(s)
		return nil
	}
	return fmt.Errorf("invalid %s %q: want one of %s", what, s, strings.Join(allowed, ", "))
}

// RunMode is how a connector node runs: natively, its Go in the engine's
// process, or confined, its certified module in the engine's wasm host.
// The zero value is the default: confined for a pulled connector, native
// for any other.
type RunMode string

// Run modes.
const (
	RunDefault  RunMode = ""
	RunNative   RunMode = "native"
	RunConfined RunMode = "confined"
)

// EnumValues lists the accepted spellings.
func (RunMode) EnumValues() []string { return []string{"native", "confined"} }

// UnmarshalText accepts one of EnumValues.
func (m *RunMode) UnmarshalText(b []byte) error {
	return oneOf(string(b), "run mode", RunMode("").EnumValues(), func(v string) { *m = RunMode(v) })
}
