// Package gooduuidkey is a connector of the certification corpus.
package gooduuidkey
