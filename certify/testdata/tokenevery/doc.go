// Package tokenevery is a connector that asks for a new token on every
// activation, so that each write of its token cache is one a token was
// issued for, and keeps a count of its activations beside the token:
// after a thousand, in production, it sends its writes without their key.
package tokenevery
