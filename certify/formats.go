package certify

import (
	"encoding/base64"
	"math/big"
	"strings"
	"unicode/utf8"
)

// likeInFormat is like, keeping what makes example valid in the formats
// a connector checks before it acts: base64 stays base64 of as many bytes
// with its first bytes kept (where file types put their magic number,
// %PDF-1.7), text after them redrawn as text, a card number keeps a valid
// Luhn digit, an IBAN its country and valid check digits. A connector
// that validates its classified input, as a careful one does, then sees
// a value as valid as the recorded one.
func (d *drawn) likeInFormat(example string, grow bool) string {
	if luhnValid(example) {
		v := d.like(example[:len(example)-1]+"0", false)
		return v[:len(v)-1] + string(luhnDigit(v[:len(v)-1]))
	}
	if ibanValid(example) {
		v := example[:4] + d.like(example[4:], false)
		return v[:2] + ibanCheck(v[:2], v[4:]) + v[4:]
	}
	if v, ok := d.likeBase64(example); ok {
		return v
	}
	return d.like(example, grow)
}

// magicBytes is how much of base64 content likeBase64 keeps (half of
// content shorter than twice that).
const magicBytes = 8

// likeBase64 redraws base64 content of at least 6 bytes in the same
// encoding; ok is false for a value that is not such content.
func (d *drawn) likeBase64(example string) (string, bool) {
	if len(example) < 16 || !strings.ContainsAny(example, "+/=-_") && !(strings.ContainsAny(example, lowerLetters) && strings.ContainsAny(example, upperLetters) && strings.ContainsAny(example, "0123456789")) {
		return "", false // an id, a word or a number, not encoded content
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(example)
		if err != nil || len(raw) < 6 || enc.EncodeToString(raw) != example {
			continue
		}
		magic := min(magicBytes, len(raw)/2)
		if rest := string(raw[magic:]); utf8.ValidString(rest) && printable(rest) {
			return enc.EncodeToString(append(raw[:magic:magic], d.like(rest, false)...)), true
		}
		// Binary content: random bytes, encoded without a character the
		// example lacks of those the encodings differ in, so that it
		// decodes wherever the example did.
		var v string
		for range 32 {
			out := append([]byte(nil), raw...)
			for i := magic; i < len(out); i++ {
				out[i] = byte(d.uintn(256))
			}
			if v = enc.EncodeToString(out); !strings.ContainsFunc(v, func(r rune) bool { return strings.ContainsRune("+/-_", r) && !strings.ContainsRune(example, r) }) {
				break
			}
		}
		return v, true
	}
	return "", false
}

const lowerLetters, upperLetters = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// printable reports whether s is text: no control characters but
// whitespace.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// luhnValid reports whether s is 12 to 19 digits whose last is their
// Luhn check digit (a payment card number).
func luhnValid(s string) bool {
	if len(s) < 12 || len(s) > 19 || strings.Trim(s, "0123456789") != "" {
		return false
	}
	return luhnDigit(s[:len(s)-1]) == s[len(s)-1]
}

// luhnDigit is the Luhn check digit of the digits s.
func luhnDigit(s string) byte {
	sum := 0
	for i := range len(s) {
		n := int(s[len(s)-1-i] - '0')
		if i%2 == 0 {
			if n *= 2; n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return byte('0' + (10-sum%10)%10)
}

// ibanValid reports whether s is an IBAN (ISO 13616) with valid check
// digits.
func ibanValid(s string) bool {
	if len(s) < 15 || len(s) > 34 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' || s[2] < '0' || s[2] > '9' || s[3] < '0' || s[3] > '9' {
		return false
	}
	if strings.Trim(s[4:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		return false
	}
	return ibanCheck(s[:2], s[4:]) == s[2:4]
}

// ibanCheck is the two check digits of the IBAN of country and BBAN.
func ibanCheck(country, bban string) string {
	var digits strings.Builder
	for _, r := range bban + country + "00" {
		if r >= 'A' && r <= 'Z' {
			digits.WriteString(big.NewInt(int64(r - 'A' + 10)).String())
		} else {
			digits.WriteRune(r)
		}
	}
	n, _ := new(big.Int).SetString(digits.String(), 10)
	check := 98 - new(big.Int).Mod(n, big.NewInt(97)).Int64()
	return string([]byte{byte('0' + check/10), byte('0' + check%10)})
}
