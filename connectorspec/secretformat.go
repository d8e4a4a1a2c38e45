package connectorspec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// SecretAlphabet is the characters of a secret's values after the prefix.
type SecretAlphabet string

// The alphabets.
const (
	AlphabetBase62    SecretAlphabet = "base62"
	AlphabetBase64URL SecretAlphabet = "base64url"
	AlphabetHex       SecretAlphabet = "hex"
	AlphabetDigits    SecretAlphabet = "digits"
)

// EnumValues lists the accepted spellings.
func (SecretAlphabet) EnumValues() []string {
	return []string{string(AlphabetBase62), string(AlphabetBase64URL), string(AlphabetHex), string(AlphabetDigits)}
}

// UnmarshalText accepts one of EnumValues.
func (a *SecretAlphabet) UnmarshalText(b []byte) error {
	if s := string(b); slices.Contains(SecretAlphabet("").EnumValues(), s) {
		*a = SecretAlphabet(s)
		return nil
	}
	return fmt.Errorf("invalid secret alphabet %q: want one of %s", b, strings.Join(SecretAlphabet("").EnumValues(), ", "))
}

// Chars are the alphabet's characters (base62 for the zero value).
func (a SecretAlphabet) Chars() string { return flowtype.SecretAlphabetChars(string(a)) }

// DefaultSecretLength is the characters after the prefix of a secret
// whose format says none.
const DefaultSecretLength = flowtype.DefaultSecretLength

// Shape is the format's prefix, alphabet and length, defaults applied
// (base62, DefaultSecretLength); a nil format has no prefix.
func (f *SecretFormat) Shape() (prefix string, alphabet SecretAlphabet, length int) {
	alphabet, length = AlphabetBase62, DefaultSecretLength
	if f == nil {
		return "", alphabet, length
	}
	if f.Alphabet != "" {
		alphabet = f.Alphabet
	}
	if f.Length > 0 {
		length = f.Length
	}
	return f.Prefix, alphabet, length
}
