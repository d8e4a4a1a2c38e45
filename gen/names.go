package gen

import (
	"strings"
	"unicode"
)

// initialisms are written in capitals inside Go names, as the Go style guide
// asks (OrderID, not OrderId).
var initialisms = map[string]bool{
	"API": true, "CPU": true, "CSS": true, "DNS": true, "EOF": true, "HTML": true, "HTTP": true,
	"HTTPS": true, "ID": true, "IP": true, "JSON": true, "SQL": true, "SSH": true, "TCP": true,
	"TLS": true, "TTL": true, "UDP": true, "UI": true, "URI": true, "URL": true, "UTF8": true,
	"UUID": true, "VM": true, "XML": true, "SKU": true,
}

// goName turns a JSON name (snake_case, kebab-case, dotted, camelCase) into
// an exported Go identifier. Names that start with a digit get an X prefix;
// a name with no letters or digits becomes "Field".
func goName(s string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	runes := []rune(s)
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(runes[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	var b strings.Builder
	for _, w := range words {
		up := strings.ToUpper(w)
		if initialisms[up] {
			b.WriteString(up)
			continue
		}
		rs := []rune(strings.ToLower(w))
		rs[0] = unicode.ToUpper(rs[0])
		b.WriteString(string(rs))
	}
	name := b.String()
	switch {
	case name == "":
		return "Field"
	case unicode.IsDigit([]rune(name)[0]):
		return "X" + name
	}
	return name
}

// suffixName is goName for a word appended to an identifier
// (InputPriority + 24x7), where a leading digit is fine.
func suffixName(s string) string {
	return strings.TrimPrefix(goName("x_"+s), "X")
}

// PackageName turns a directory name into a Go package name: lower-case
// letters and digits, not starting with a digit; "connector" when nothing
// is left.
func PackageName(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9' && b.Len() > 0) {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "connector"
	}
	return b.String()
}
