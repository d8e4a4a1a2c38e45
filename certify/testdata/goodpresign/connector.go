package goodpresign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Connector presigns links.
type Connector struct{}

// Run signs the path and expiry with the signing key.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretFilesSigningKey)
	if err != nil {
		return Output{}, err
	}
	mac := hmac.New(sha256.New, []byte(key))
	fmt.Fprintf(mac, "%s\n%d", in.Path, in.Expires)
	return Output{URL: fmt.Sprintf("https://files.example%s?expires=%d&sig=%s", in.Path, in.Expires, hex.EncodeToString(mac.Sum(nil)))}, nil
}
