package flowtype

// SecretAlphabetChars are the characters of a secret format's alphabet
// (base62, base64url, hex, digits; base62 for any other name), in the
// order values are drawn from.
func SecretAlphabetChars(alphabet string) string {
	const digits, lower, upper = "0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	switch alphabet {
	case "base64url":
		return upper + lower + digits + "-_"
	case "hex":
		return digits + "abcdef"
	case "digits":
		return digits
	}
	return digits + upper + lower
}

// DefaultSecretLength is the characters after the prefix of a secret
// whose format says none.
const DefaultSecretLength = 32
