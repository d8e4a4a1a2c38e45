package writer

import "net/http"

// Connector posts the note with the activation's idempotency key.
type Connector struct{}

// Run posts.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	body := ""
	if in.Note != nil {
		body = *in.Note
	}
	resp, err := ctx.Do(http.MethodPost, "https://api.example.com/notes", http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}, []byte(body))
	if err != nil {
		return Output{}, err
	}
	status := int64(resp.Status)
	return Output{Status: &status}, nil
}
