// Package jsonhttp writes the gateway's JSON responses, errors included, in
// the one shape every surface uses: {"error": "what was wrong and what to do"}.
package jsonhttp

import (
	"encoding/json"
	"net/http"
)

// Write answers status with v encoded as JSON.
func Write(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	WriteRaw(w, status, body)
}

// WriteRaw answers status with body, which must already be JSON.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
}

// WriteError answers status with {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	Write(w, status, Error{Error: msg})
}
