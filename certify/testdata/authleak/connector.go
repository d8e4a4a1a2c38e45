package authleak

import (
	"fmt"
	"log"
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector sends notifications.
type Connector struct{}

// Run sends the message; when the provider refuses the token (401/403, an
// answer no fixture records) it logs the token and puts it in the error.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	tok, err := ctx.Secret(SecretNotifyToken)
	if err != nil {
		return Output{}, err
	}
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}, "Authorization": {"Bearer " + tok}}
	resp, err := ctx.Do(http.MethodPost, "https://api.notify.example/messages", h, []byte("msg="+in.Msg))
	if err != nil && runtime.KindOf(err) != runtime.Auth {
		return Output{}, err
	}
	if err != nil || resp.Status == 401 || resp.Status == 403 {
		log.Printf("notify: token %s rejected", tok)
		return Output{}, runtime.Errorf(runtime.Auth, "token %s rejected", tok)
	}
	_ = fmt.Sprint
	return Output{Sent: true}, nil
}
