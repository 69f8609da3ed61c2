package pgdb

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Unavailable reports whether err says the database could not be reached
// or went away mid-request — an outage, a restart, a full connection table —
// rather than anything about the request. Such a failure is retryable: the
// same request can succeed once the database is back, so services answer it
// as gRPC Unavailable (REST 503, "retry shortly"), never as an internal error.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, puddle.ErrClosedPool):
		return true
	}
	code := Code(err)
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case code == "57P01", code == "57P02", code == "57P03": // admin/crash shutdown, cannot connect now
		return true
	case code == "53300": // too many connections
		return true
	}
	// A connection that broke before the request reached the server.
	return pgconn.SafeToRetry(err)
}
