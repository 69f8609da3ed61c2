// Package openapi embeds the OpenAPI document `make proto` generates from the
// protos' HTTP annotations and finishes (gateway/internal/openapidoc), so the
// gateway serves, byte for byte, the contract it was built with.
package openapi

import _ "embed"

// Spec is zimmer.swagger.json (OpenAPI 2.0).
//
//go:embed zimmer.swagger.json
var Spec []byte
