package goodoauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Connector creates leads.
type Connector struct{}

const tokenURL = "https://login.crm.example/oauth2/token"

// cached is the token as the KV entry keeps it.
type cached struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
}

// token returns a token that is valid for another minute at least: the
// cached one, or a new one from the token endpoint, cached until it
// expires.
func token(ctx Context, p Params) (string, error) {
	entry := "oauth/crm/" + p.ClientID
	if b, ok, err := ctx.KVGet(entry); err != nil {
		return "", err
	} else if ok {
		var c cached
		if json.Unmarshal(b, &c) == nil && ctx.Now().Add(time.Minute).Before(c.Expires) {
			return c.Token, nil
		}
	}
	secret, err := ctx.Secret(SecretCrmClientSecret)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {p.ClientID}, "client_secret": {secret}}
	resp, err := ctx.Do(http.MethodPost, tokenURL, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte(form.Encode()))
	if err != nil {
		return "", err
	}
	var got struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.Unmarshal(resp.Body, &got); err != nil || got.AccessToken == "" {
		return "", fmt.Errorf("token endpoint answered without a token")
	}
	b, _ := json.Marshal(cached{Token: got.AccessToken, Expires: ctx.Now().Add(time.Duration(got.ExpiresIn) * time.Second)})
	if err := ctx.KVPut(entry, b); err != nil {
		return "", err
	}
	return got.AccessToken, nil
}

// Run creates the lead under the activation's idempotency key.
func (Connector) Run(ctx Context, p Params, in Input) (Output, error) {
	tok, err := token(ctx, p)
	if err != nil {
		return Output{}, err
	}
	body, _ := json.Marshal(map[string]string{"email": in.Email, "name": in.Name})
	h := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}, "Idempotency-Key": {ctx.IdempotencyKey()}}
	resp, err := ctx.Do(http.MethodPost, "https://api.crm.example/v1/leads", h, body)
	if err != nil {
		return Output{}, err
	}
	var lead struct{ ID string }
	if err := json.Unmarshal(resp.Body, &lead); err != nil {
		return Output{}, err
	}
	return Output{Lead: lead.ID}, nil
}
