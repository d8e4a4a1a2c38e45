// Package goodoauth is a legitimate connector that authenticates with an
// OAuth 2.0 client-credentials token, which it caches in KV until it
// nears expiry: the token request and the cache are no effects.
package goodoauth
