package pgdb_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

func TestUnavailableClassifiesErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                    {nil, false},
		"unique violation":       {&pgconn.PgError{Code: pgdb.CodeUniqueViolation}, false},
		"plain error":            {errors.New("boom"), false},
		"admin shutdown":         {&pgconn.PgError{Code: "57P01"}, true},
		"cannot connect now":     {&pgconn.PgError{Code: "57P03"}, true},
		"connection failure":     {&pgconn.PgError{Code: "08006"}, true},
		"too many connections":   {&pgconn.PgError{Code: "53300"}, true},
		"unexpected EOF wrapped": {errors.Join(errors.New("read"), io.ErrUnexpectedEOF), true},
		"net error":              {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, pgdb.Unavailable(tc.err))
		})
	}
}

// An outage seen through a real pool: the database's address stops
// answering (a proxy in front of it closes), and both a pooled connection
// that breaks and a new one that cannot connect are classified Unavailable.
func TestUnavailableDuringAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := pgtest.NewProxy(t, u.Host)
	u.Host = proxy.Addr

	pool, err := pgdb.Open(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var one int
	require.NoError(t, pool.QueryRow(ctx, `SELECT 1`).Scan(&one))

	proxy.Down()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 3 { // the broken pooled connection, then new connections refused
		err = pool.QueryRow(qctx, `SELECT 1`).Scan(&one)
		require.Error(t, err)
		require.Truef(t, pgdb.Unavailable(err), "%v (%T) is not classified unavailable", err, err)
	}
}
