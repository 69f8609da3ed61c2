package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Without GITHUB_WEBHOOK_SECRET the webhook's route does not exist; with
// it, a delivery no signature opens — an API key or an admin key among
// them — is 401 and reaches no service. (A signed delivery's path to
// lifecycle is e2e TestGitHubPullRequests'.)
func TestGitHubWebhookIsOpenedByItsSignatureOnly(t *testing.T) {
	t.Parallel()
	const body = `{"action":"closed","pull_request":{"number":7},"repository":{"full_name":"acme/app"}}`
	event := []string{"X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-1"}

	b := setup(t, setupOpts{})
	resp := b.do(t, http.MethodPost, "/github/webhook", body, event...)
	require.Equal(t, http.StatusNotFound, resp.status, string(resp.body))

	b = setup(t, setupOpts{githubSecret: "webhook-secret"})
	for name, header := range map[string][]string{
		"unsigned":     event,
		"wrong secret": append([]string{"X-Hub-Signature-256", "sha256=00"}, event...),
		"an API key":   append([]string{"X-API-Key", testKey}, event...),
		"an admin key": append([]string{"Authorization", "Bearer " + adminKey}, event...),
		"not sha256":   append([]string{"X-Hub-Signature", "sha1=00"}, event...),
	} {
		resp := b.do(t, http.MethodPost, "/github/webhook", body, header...)
		require.Equal(t, http.StatusUnauthorized, resp.status, "%s: %s", name, resp.body)
	}
	require.Empty(t, b.fake.Calls("AcceptGitHubDelivery"))
}
