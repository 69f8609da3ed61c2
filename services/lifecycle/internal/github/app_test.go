package github_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/github"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// fakeApp is GitHub's installation-token endpoint: it checks the JWT's
// RS256 signature against the App's public key and its claims, then
// mints an hour's token; and it serves a pull request to that token only.
type fakeApp struct {
	t      *testing.T
	pub    *rsa.PublicKey
	mu     sync.Mutex
	minted int
}

func (f *fakeApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/app/installations/42/access_tokens":
		jwt, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		parts := strings.Split(jwt, ".")
		if len(parts) != 3 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if err != nil || rsa.VerifyPKCS1v15(f.pub, crypto.SHA256, sum[:], sig) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"A JSON web token could not be decoded"}`))
			return
		}
		claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var c struct {
			Iss      string `json:"iss"`
			Iat, Exp int64
		}
		require.NoError(f.t, json.Unmarshal(claims, &c))
		require.Equal(f.t, "1234", c.Iss)
		require.LessOrEqual(f.t, c.Exp-c.Iat, int64(600), "at most ten minutes")
		f.minted++
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"token":"ghs_%d","expires_at":%q}`, f.minted, time.Unix(c.Iat+60, 0).Add(time.Hour).UTC().Format(time.RFC3339))
	case r.URL.Path == "/repos/acme/app/pulls/7":
		if r.Header.Get("Authorization") != fmt.Sprintf("Bearer ghs_%d", f.minted) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"state":"closed","merged":true}`))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestAnAppInstallationTokenIsMintedAndRenewed(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	parsed, err := github.ParsePrivateKey(pemKey)
	require.NoError(t, err)
	f := &fakeApp{t: t, pub: &key.PublicKey}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)

	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	app := &github.AppInstallation{BaseURL: srv.URL, AppID: "1234", InstallationID: 42, Key: parsed, HTTP: srv.Client(),
		Now: func() time.Time { return now }}
	c := github.NewClient(srv.URL, app, 5*time.Second)
	pr := rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}
	for range 3 {
		r, err := c.ReadPullRequest(context.Background(), pr, 0, 0)
		require.NoError(t, err)
		require.True(t, r.Merged)
	}
	require.Equal(t, 1, f.minted, "the token is kept")
	now = now.Add(56 * time.Minute)
	_, err = c.ReadPullRequest(context.Background(), pr, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 2, f.minted, "renewed five minutes before it expires")

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	wrong := &github.AppInstallation{BaseURL: srv.URL, AppID: "1234", InstallationID: 42, Key: other, HTTP: srv.Client()}
	_, err = wrong.Token(context.Background())
	require.ErrorContains(t, err, "check GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID and the key")

	_, err = github.ParsePrivateKey([]byte("not a key"))
	require.ErrorContains(t, err, "not PEM")
}
