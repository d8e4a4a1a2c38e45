package charge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/examples/connectors/schemas"
	"github.com/flowgen-dev/flowgen/runtime"
)

// Endpoint is the provider's charges API.
const Endpoint = "https://api.stripe.com/v1/charges"

// Connector captures card payments. It holds no state.
type Connector struct{}

// Run posts the charge with the activation's idempotency key as the
// Idempotency-Key header, so a repeated call returns the original charge.
// The connector owns retries: transient failures are retried here with the
// declared backoff; rate limiting is returned at once with the provider's
// Retry-After, and every other error kind is final.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretStripeSecretKey)
	if err != nil {
		return Output{}, err
	}
	header := http.Header{
		"Idempotency-Key": {ctx.IdempotencyKey()},
		"Content-Type":    {"application/x-www-form-urlencoded"},
		"Authorization":   {"Bearer " + key},
	}
	body := formBody(params, in)
	policy := RetryPolicy()
	for attempt := 1; ; attempt++ {
		resp, err := ctx.Do(http.MethodPost, Endpoint, header, body)
		if err == nil {
			return decodeCharge(in.OrderID, resp.Body)
		}
		kind := runtime.KindOf(err)
		if kind != runtime.Transient || !policy.Retryable(kind, attempt) {
			return Output{}, err
		}
		select {
		case <-ctx.Done():
			return Output{}, err
		case <-time.After(policy.Backoff(attempt + 1)):
		}
	}
}

// formBody encodes the charge in the provider's form encoding; field order
// is fixed so that the request is the same bytes on every retry.
func formBody(params Params, in Input) []byte {
	fields := []string{
		"amount=" + fmt.Sprint(in.TotalCents),
		"currency=" + strings.ToLower(string(in.Currency)),
	}
	if in.CardToken != nil {
		fields = append(fields, "source="+url.QueryEscape(*in.CardToken))
	}
	fields = append(fields, "metadata[order_id]="+url.QueryEscape(in.OrderID))
	if params.StatementDescriptor != nil {
		fields = append(fields, "statement_descriptor="+url.QueryEscape(*params.StatementDescriptor))
	}
	return []byte(strings.Join(fields, "&"))
}

// charge is the part of the provider's response the connector reads.
type charge struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
}

func decodeCharge(orderID string, body []byte) (Output, error) {
	var c charge
	if err := json.Unmarshal(body, &c); err != nil || c.ID == "" {
		return Output{}, runtime.Errorf(runtime.SchemaMismatch, "charge response is not a charge: %s", body)
	}
	return Output{
		ChargeID:    c.ID,
		OrderID:     orderID,
		AmountCents: c.Amount,
		Currency:    schemas.ChargeCurrency(strings.ToUpper(c.Currency)),
		Status:      schemas.ChargeStatus(c.Status),
	}, nil
}
