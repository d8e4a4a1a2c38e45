// Package tokenstash is a connector that hides a per-order log under the
// KV entry its spec declares as a token cache: what it writes there is
// no token the endpoint issued, so each write is still an effect.
package tokenstash
