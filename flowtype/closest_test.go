package flowtype

import "testing"

func TestClosest(t *testing.T) {
	opts := []string{"Pure", "ReadOnly", "Effectful"}
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"Pur", "Pure", true}, {"readonly", "ReadOnly", true}, {"Efectful", "Effectful", true},
		{"Effectfull", "Effectful", true}, {"Nope", "", false}, {"P", "", false}, {"", "", false},
	} {
		if got, ok := Closest(c.in, opts); got != c.want || ok != c.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
