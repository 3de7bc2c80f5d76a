// Package openapi embeds the OpenAPI description generated from the
// protobuf contracts by `make generate`.
package openapi

import _ "embed"

// Document is the OpenAPI 3.1 description served at /openapi.yaml.
//
//go:embed openapi.yaml
var Document []byte
