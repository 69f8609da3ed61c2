// Package jsonhttp writes the gateway's JSON responses, errors included, in
// the one shape every surface uses, the original system's:
// {"error": kind, "message": what was wrong and what to do, "messages": [one
// entry per problem]}.
package jsonhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ContentType is every JSON answer's: JSON is UTF-8, and saying so keeps
// a client from guessing another charset.
const ContentType = "application/json; charset=utf-8"

// Write answers status with v encoded as JSON.
func Write(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError,
			[]byte(`{"error":"Internal error","message":"internal error","messages":["internal error"]}`)
	}
	WriteRaw(w, status, body)
}

// WriteRaw answers status with body, which must already be JSON.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Error is the body of every error response. `make proto` documents it in
// the OpenAPI document from these fields and their doc tags.
type Error struct {
	Error string `json:"error" doc:"The kind of failure, e.g. \"Validation failed\", \"Malformed JSON\", \"Not found\", \"Cannot trash\", \"Cannot restore\"."`
	// Message is the whole explanation, every problem included.
	Message string `json:"message" doc:"What was wrong and what to do about it."`
	// Messages has one entry per problem: each field that failed
	// validation, or the message alone.
	Messages []string `json:"messages" doc:"One entry per problem, e.g. each field that failed validation; never empty."`
	// Code is the service's code for the refusal, when it has one.
	Code string `json:"code,omitempty" doc:"The refusal's code, when the rule that refused has one, e.g. \"unparseable_wake_at\", \"wake_at_too_soon\", \"not_wakeable\", \"missing_prompt\"."`
}

// The kinds of failure the gateway names beyond a status's words (see
// Kind).
const (
	// KindValidation is a well-formed request whose values a rule refuses
	// (422).
	KindValidation = "Validation failed"
	// KindMalformedJSON is a body that is not the JSON object the route
	// takes (400).
	KindMalformedJSON = "Malformed JSON"
)

// kinds are the statuses' words as the error kind, in the original's
// sentence case.
var kinds = map[int]string{
	http.StatusBadRequest:            "Bad request",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "Not found",
	http.StatusMethodNotAllowed:      "Method not allowed",
	http.StatusConflict:              "Conflict",
	http.StatusRequestEntityTooLarge: "Request too large",
	http.StatusUnprocessableEntity:   "Unprocessable",
	http.StatusTooManyRequests:       "Too many requests",
	499:                              "Request canceled", // grpc-gateway's status for Canceled
	http.StatusInternalServerError:   "Internal error",
	http.StatusNotImplemented:        "Not implemented",
	http.StatusServiceUnavailable:    "Service unavailable",
	http.StatusGatewayTimeout:        "Timeout",
}

// Kind is the kind of failure status names when nothing more specific is
// known.
func Kind(status int) string {
	if k, ok := kinds[status]; ok {
		return k
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error"
}

// WriteError answers status with message, the status's words as its kind.
func WriteError(w http.ResponseWriter, status int, message string) {
	WriteProblem(w, status, "", message)
}

// WriteProblem answers status with an error of kind (Kind(status) when
// empty), message and one entry per problem in messages (message alone when
// none are given).
func WriteProblem(w http.ResponseWriter, status int, kind, message string, messages ...string) {
	WriteCodedProblem(w, status, kind, "", message, messages...)
}

// WriteCodedProblem is WriteProblem with the refusal's code ("" for none).
func WriteCodedProblem(w http.ResponseWriter, status int, kind, code, message string, messages ...string) {
	if kind == "" {
		kind = Kind(status)
	}
	if len(messages) == 0 {
		messages = []string{message}
	}
	Write(w, status, Error{Error: kind, Message: message, Messages: messages, Code: code})
}

// Decode reads r's body, at most maxBytes, as one JSON object into v,
// refusing unknown fields and trailing data. When it cannot, it answers 400
// Malformed JSON (413 when too large) itself, naming example as what to
// send, and returns false.
func Decode(w http.ResponseWriter, r *http.Request, v any, maxBytes int64, example string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); !errors.Is(extra, io.EOF) {
			err = errors.New("trailing data after the JSON object")
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooLarge):
		WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: the limit is %d bytes", tooLarge.Limit))
	default:
		WriteProblem(w, http.StatusBadRequest, KindMalformedJSON, fmt.Sprintf("malformed JSON body: %v; send e.g. %s", err, example))
	}
	return false
}
