// Package tokencharge is a connector whose spec declares its charge
// endpoint as the OAuth token endpoint and sends each charge with a
// grant_type, so that repeats would pass for token requests.
package tokencharge
