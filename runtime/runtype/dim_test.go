package runtype

import "testing"

func TestReenterNestedLoops(t *testing.T) {
	for _, c := range []struct {
		dim, target, want string
		pass              int
	}{
		{"", "x", "/x~1", 1},
		{"/x~1", "x", "/x~2", 2},
		{"/x~2/y~3", "y", "/x~2/y~4", 4},
		{"/x~2/y~3", "x", "/x~3", 3},
		{"/0/x~9", "x", "/0/x~10", 10},
		{"/x~2/3", "x", "/x~3", 3},         // from inside a forEach element of the pass
		{"/xx~2", "x", "/xx~2/x~1", 1},     // another node's loop
		{"/x~junk", "x", "/x~junk/x~1", 1}, // not a pass number
	} {
		got, pass := Dim(c.dim).Reenter(c.target)
		if string(got) != c.want || pass != c.pass {
			t.Errorf("Dim(%q).Reenter(%q) = %q, %d; want %q, %d", c.dim, c.target, got, pass, c.want, c.pass)
		}
	}
}
