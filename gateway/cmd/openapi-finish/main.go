// Command openapi-finish finishes the OpenAPI document protoc-gen-openapiv2
// wrote, in place (gateway/internal/openapidoc says how). `make proto` runs
// it right after buf generate; the gateway then serves the committed file
// as it is.
package main

import (
	"fmt"
	"os"

	"github.com/zimmerhq/zimmer/gateway/internal/openapidoc"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-finish:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: openapi-finish <zimmer.swagger.json>")
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	doc, err := openapidoc.Finish(raw)
	if err != nil {
		return err
	}
	return os.WriteFile(args[0], doc, 0o644)
}
