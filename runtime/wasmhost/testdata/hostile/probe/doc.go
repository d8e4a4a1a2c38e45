// Package probe is a hostile http.read and secrets connector for the
// confinement tests: it sends the requests and asks for the secret
// handles its input names, headers spelled as given.
package probe
