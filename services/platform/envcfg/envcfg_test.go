package envcfg_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
)

func TestABadValueNamesItsVariable(t *testing.T) {
	t.Parallel()
	type nested struct {
		Grace time.Duration `env:"X_GRACE, default=1s"`
	}
	type config struct {
		Retention time.Duration `env:"X_RETENTION, default=24h"`
		Count     int           `env:"X_COUNT"`
		Inner     nested
	}
	var cfg config
	getenv := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	require.NoError(t, envcfg.Load(context.Background(), getenv(nil), &cfg))
	require.Equal(t, 24*time.Hour, cfg.Retention)
	require.Equal(t, time.Second, cfg.Inner.Grace)

	for key, bad := range map[string]string{"X_RETENTION": "soon", "X_COUNT": "many", "X_GRACE": "later"} {
		var fresh config // a set field is not read again
		err := envcfg.Load(context.Background(), getenv(map[string]string{key: bad}), &fresh)
		require.ErrorContains(t, err, key, "a bad %s names the variable, not the Go field", key)
		require.ErrorContains(t, err, bad)
	}
}
