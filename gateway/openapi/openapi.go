// Package openapi embeds the OpenAPI document `make proto` generates from the
// protos' HTTP annotations, so the gateway serves the contract it was built
// with.
package openapi

import _ "embed"

// Spec is zimmer.swagger.json (OpenAPI 2.0).
//
//go:embed zimmer.swagger.json
var Spec []byte
