//go:build !testboundary

package testboundary

// Compiled reports whether this build may serve the test boundary: not
// this one (built without -tags testboundary), whatever the environment
// says.
const Compiled = false
