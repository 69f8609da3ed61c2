package apikey_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/apikey"
)

func TestSet(t *testing.T) {
	t.Parallel()

	s := apikey.Parse(" alpha, ,beta ")
	require.True(t, s.Enabled())
	require.True(t, s.Valid("alpha"))
	require.True(t, s.Valid("beta"))
	require.False(t, s.Valid("alph"))
	require.False(t, s.Valid(""))
	require.False(t, apikey.Parse("").Enabled())
	require.False(t, apikey.Parse("").Valid("alpha"))
}

func TestFromRequest(t *testing.T) {
	t.Parallel()

	r := httptest.NewRequest("GET", "/", nil)
	require.Empty(t, apikey.FromRequest(r))
	r.Header.Set("Authorization", "Bearer tok")
	require.Equal(t, "tok", apikey.FromRequest(r))
	r.Header.Set("X-API-Key", "key")
	require.Equal(t, "key", apikey.FromRequest(r), "X-API-Key wins")
	require.Empty(t, apikey.BearerToken("Basic abc"))
}
