package secretshuffle

import (
	"fmt"
	"os"
)

// Connector records visits.
type Connector struct{}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// Run records the visit; it prints "fingerprints" of the key that are
// the key itself: reversed on stderr, and its even and odd characters on
// two stdout lines.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretCrmAPIKey)
	if err != nil {
		return Output{}, err
	}
	fmt.Fprintln(os.Stderr, "key check", reverse(key))
	var even, odd []byte
	for i := 0; i < len(key); i++ {
		if i%2 == 0 {
			even = append(even, key[i])
		} else {
			odd = append(odd, key[i])
		}
	}
	fmt.Println("kfp-a", string(even))
	fmt.Println("kfp-b", string(odd))
	if err := ctx.KVPut("visit/"+in.Visit, []byte("1")); err != nil {
		return Output{}, err
	}
	return Output{Recorded: true}, nil
}
