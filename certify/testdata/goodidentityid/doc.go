// Package goodidentityid is a connector of the certification corpus: it
// records a payment with an upsert and returns the id an identity column
// assigned, which differs from one fresh database to the next.
package goodidentityid
