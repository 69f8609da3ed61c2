package github

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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AppInstallation is a GitHub App's installation token, as GitHub documents
// it (Authenticating as a GitHub App installation): a JWT (RS256, iss the
// App's id, iat 60 s in the past against clock drift, exp at most ten
// minutes on) signed with the App's private key, exchanged at
// POST /app/installations/{installation_id}/access_tokens for a token that
// lasts an hour. The token is kept and renewed five minutes before it
// expires; neither it nor the key is ever logged.
type AppInstallation struct {
	BaseURL        string
	AppID          string
	InstallationID int64
	Key            *rsa.PrivateKey
	HTTP           *http.Client
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
}

// renewBefore is how long before its expiry a token is renewed.
const renewBefore = 5 * time.Minute

// Token implements TokenSource.
func (a *AppInstallation) Token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.token != "" && now.Before(a.expires.Add(-renewBefore)) {
		return a.token, nil
	}
	jwt, err := AppJWT(a.AppID, a.Key, now)
	if err != nil {
		return "", err
	}
	path := "/app/installations/" + strconv.FormatInt(a.InstallationID, 10) + "/access_tokens"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(a.BaseURL, "/")+path, nil)
	if err != nil {
		return "", fmt.Errorf("mint a GitHub App installation token: %w", err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", "zimmer")
	req.Header.Set("Authorization", "Bearer "+jwt)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("mint a GitHub App installation token: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", fmt.Errorf("mint a GitHub App installation token: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("mint a GitHub App installation token: POST %s: %s (%s); check GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID and the key",
			path, resp.Status, githubMessage(body))
	}
	var out struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" {
		return "", errors.New("mint a GitHub App installation token: the answer holds no token")
	}
	a.token, a.expires = out.Token, out.ExpiresAt
	return a.token, nil
}

func (a *AppInstallation) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// AppJWT is the App's JSON Web Token at now: RS256 over
// {"iat": now-60s, "exp": now+9m, "iss": appID}.
func AppJWT(appID string, key *rsa.PrivateKey, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims, err := json.Marshal(map[string]any{"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(9 * time.Minute).Unix(), "iss": appID})
	if err != nil {
		return "", fmt.Errorf("encode the App's JWT claims: %w", err)
	}
	signed := header + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign the App's JWT: %w", err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// ParsePrivateKey reads a GitHub App's private key as GitHub hands it out
// (PEM, "RSA PRIVATE KEY", PKCS #1), or PKCS #8.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("the GitHub App's private key is not PEM (-----BEGIN RSA PRIVATE KEY-----)")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the GitHub App's private key is neither PKCS #1 nor PKCS #8: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("the GitHub App's private key is not an RSA key")
	}
	return rk, nil
}
