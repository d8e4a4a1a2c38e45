// Package docs holds flowgen's documentation. Its test runs every
// walkthrough in README.md and docs/*.md as written, so the documents
// cannot drift from what the commands do.
package docs
