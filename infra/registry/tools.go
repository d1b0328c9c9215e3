//go:build tools

// Package tools pins the AxonOps Schema Registry as a build dependency, so that
// go.mod/go.sum lock the exact module graph `tao infra up` builds the binary from.
package tools

import _ "github.com/axonops/axonops-schema-registry/cmd/schema-registry"
