//go:build testboundary

package testboundary

// Compiled reports whether this build may serve the test boundary: built
// with -tags testboundary, as the e2e suite builds the gateway.
const Compiled = true
