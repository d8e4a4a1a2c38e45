package slackpost

import (
	"encoding/json"
	"net/http"
)

// Connector posts to Slack. It holds no state.
type Connector struct{}

// Run posts "Order <id> is paid" to the channel. Incoming webhooks have no
// idempotency header, so the first attempt of an activation claims the
// activation's key in the dedupe store and a duplicate delivery (another
// first attempt with the same key) posts nothing; retries of the same
// activation (Attempt > 1) post again, since the earlier attempt failed.
// This is at most once per delivery and at least once per activation when
// retries succeed, which is the best a webhook allows.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	if ctx.Attempt() == 1 {
		first, err := ctx.PutIfAbsent("slack-post:"+ctx.IdempotencyKey(), IdempotencyTTL)
		if err != nil {
			return Output{}, err
		}
		if !first {
			return Output{Ok: true}, nil
		}
	}
	webhook, err := ctx.Secret(SecretSlackOrdersWebhook)
	if err != nil {
		return Output{}, err
	}
	body, err := json.Marshal(map[string]string{"channel": *params.Channel, "text": "Order " + in.OrderID + " is paid"})
	if err != nil {
		return Output{}, err
	}
	if _, err := ctx.Do(http.MethodPost, webhook, http.Header{"Content-Type": {"application/json"}}, body); err != nil {
		return Output{}, err
	}
	return Output{Ok: true}, nil
}
