package flowtype

import (
	"encoding"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// enumCase is one enum type as its text form is seen from outside.
type enumCase struct {
	name   string
	values []string
	fresh  func() encoding.TextUnmarshaler
}

func enums() []enumCase {
	return []enumCase{
		{"Effects", Effects(0).EnumValues(), func() encoding.TextUnmarshaler { return new(Effects) }},
		{"Determinism", Determinism(0).EnumValues(), func() encoding.TextUnmarshaler { return new(Determinism) }},
		{"Delivery", Delivery(0).EnumValues(), func() encoding.TextUnmarshaler { return new(Delivery) }},
		{"Ordering", Ordering(0).EnumValues(), func() encoding.TextUnmarshaler { return new(Ordering) }},
		{"RetryOwner", RetryOwner(0).EnumValues(), func() encoding.TextUnmarshaler { return new(RetryOwner) }},
		{"ErrorKind", ErrorKind(0).EnumValues(), func() encoding.TextUnmarshaler { return new(ErrorKind) }},
	}
}

// TestEnumsRoundTrip parses every documented value and prints it back.
func TestEnumsRoundTrip(t *testing.T) {
	for _, e := range enums() {
		if len(e.values) < 2 {
			t.Errorf("%s has %d values", e.name, len(e.values))
		}
		for _, v := range e.values {
			dst := e.fresh()
			if err := dst.UnmarshalText([]byte(v)); err != nil {
				t.Errorf("%s %q: %v", e.name, v, err)
				continue
			}
			out, err := dst.(encoding.TextMarshaler).MarshalText()
			if err != nil || string(out) != v {
				t.Errorf("%s %q prints as %q (%v)", e.name, v, out, err)
			}
		}
	}
}

// TestEnumErrorsSuggest checks that a wrong-case spelling is refused with
// the right spelling suggested, and nonsense with the values listed.
func TestEnumErrorsSuggest(t *testing.T) {
	for _, e := range enums() {
		want := e.values[len(e.values)-1]
		err := e.fresh().UnmarshalText([]byte(strings.ToLower(want) + "x"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: misspelling error %v does not mention %q", e.name, err, want)
		}
	}
}

func TestDuration(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1m30s")); err != nil || d.String() != "1m30s" {
		t.Errorf("1m30s: %v %v", d, err)
	}
	for _, bad := range []string{"-1s", "10", "soon", ""} {
		if err := new(Duration).UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	re := regexp.MustCompile(DurationPattern)
	for _, s := range []string{"500ms", "1h30m", "2.5s", "24h"} {
		if !re.MatchString(s) {
			t.Errorf("DurationPattern rejects %q", s)
		}
		if err := new(Duration).UnmarshalText([]byte(s)); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// TestCapabilityCatalogue keeps the catalogue sorted and consistent: every
// network capability needs an egress allowlist, and names are unique.
func TestCapabilityCatalogue(t *testing.T) {
	names := CapabilityNames()
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("catalogue not sorted/unique at %q, %q", names[i-1], names[i])
		}
	}
	for _, c := range Capabilities {
		got, ok := LookupCapability(c.Name)
		if !ok || got != c {
			t.Errorf("lookup %s: %v %v", c.Name, got, ok)
		}
		if strings.HasPrefix(string(c.Name), "http.") && !c.Network {
			t.Errorf("%s reaches other hosts but is not marked Network", c.Name)
		}
		if c.Effects == Effectful && c.Determinism != BestEffort {
			t.Errorf("%s writes yet claims %s determinism", c.Name, c.Determinism)
		}
	}
	if _, ok := LookupCapability("http.raed"); ok {
		t.Error("unknown capability found")
	}
}

// TestKindsForResponse: the taxonomy of provider answers, and an error
// answer that says when to come back (Retry-After) may be RateLimited
// whatever its status (a 403 throttle), never a success or a timeout.
func TestKindsForResponse(t *testing.T) {
	for _, tc := range []struct {
		status           int
		timeout, retryIn bool
		want             []ErrorKind
	}{
		{401, false, false, []ErrorKind{Auth}},
		{403, false, false, []ErrorKind{Auth, PolicyDenied}},
		{403, false, true, []ErrorKind{Auth, PolicyDenied, RateLimited}},
		{429, false, true, []ErrorKind{RateLimited}},
		{503, false, true, []ErrorKind{Transient, RateLimited}},
		{404, false, false, []ErrorKind{Permanent, SchemaMismatch}},
		{0, true, true, []ErrorKind{Transient}},
		{200, false, true, nil},
	} {
		if got := KindsForResponse(tc.status, tc.timeout, tc.retryIn); !slices.Equal(got, tc.want) {
			t.Errorf("KindsForResponse(%d, %v, %v) = %v, want %v", tc.status, tc.timeout, tc.retryIn, got, tc.want)
		}
	}
}
