// Package flows holds the example flows and their generated constructors:
// NewOrdersFulfilment and NewCatalogPriceRefresh build runtime flows from
// the example connectors, with connections the compiler type-checks.
package flows

//go:generate go tool flowgen gen
