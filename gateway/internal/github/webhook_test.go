package github_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/github"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// GitHub's documented test values (Validating webhook deliveries).
const (
	docSecret = "It's a Secret to Everybody"
	docBody   = "Hello, World!"
	docSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func signed(sig string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	return h
}

func TestVerifyAsGitHubDocumentsIt(t *testing.T) {
	t.Parallel()
	require.Equal(t, docSig, "sha256="+hex.EncodeToString(github.Sign([]byte(docSecret), []byte(docBody))), "GitHub's own example")
	require.NoError(t, github.Verify([]byte(docSecret), signed(docSig), []byte(docBody)))
	require.ErrorIs(t, github.Verify([]byte(docSecret), signed(""), []byte(docBody)), github.ErrNoSignature)
	require.ErrorIs(t, github.Verify([]byte("another secret"), signed(docSig), []byte(docBody)), github.ErrBadSignature)
	require.ErrorIs(t, github.Verify([]byte(docSecret), signed(docSig), []byte(docBody+" ")), github.ErrBadSignature, "the body is signed byte for byte")
	require.ErrorIs(t, github.Verify([]byte(docSecret), signed(strings.Replace(docSig, "sha256=", "sha1=", 1)), []byte(docBody)), github.ErrBadSignature)
	require.ErrorIs(t, github.Verify([]byte(docSecret), signed("sha256=zz"), []byte(docBody)), github.ErrBadSignature)
}

// FuzzVerify: no header or body makes Verify panic, and only the right
// MAC verifies.
func FuzzVerify(f *testing.F) {
	f.Add(docSig, []byte(docBody))
	f.Add("sha256=", []byte{})
	f.Add("sha256=00", []byte("{}"))
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		err := github.Verify([]byte(docSecret), signed(sig), body)
		if err == nil {
			require.Equal(t, "sha256="+hex.EncodeToString(github.Sign([]byte(docSecret), body)), strings.ToLower(sig))
		}
	})
}

type fakeLifecycle struct {
	got  []*lifecyclev1.AcceptGitHubDeliveryRequest
	resp *lifecyclev1.AcceptGitHubDeliveryResponse
	err  error
}

func (f *fakeLifecycle) AcceptGitHubDelivery(_ context.Context, in *lifecyclev1.AcceptGitHubDeliveryRequest, _ ...grpc.CallOption) (*lifecyclev1.AcceptGitHubDeliveryResponse, error) {
	f.got = append(f.got, in)
	return f.resp, f.err
}

func post(t *testing.T, h http.Handler, event, delivery, body string, sign bool) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, github.Route, strings.NewReader(body))
	if event != "" {
		req.Header.Set("X-GitHub-Event", event)
	}
	if delivery != "" {
		req.Header.Set("X-GitHub-Delivery", delivery)
	}
	if sign {
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(github.Sign([]byte(docSecret), []byte(body))))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The handler answers each outcome with its status, and 503 when the
// delivery could not be taken, so GitHub's redelivery works.
func TestHandler(t *testing.T) {
	t.Parallel()
	outcomes := map[lifecyclev1.GitHubDeliveryOutcome]int{
		lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_ACCEPTED:  http.StatusOK,
		lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_DUPLICATE: http.StatusOK,
		lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_IGNORED:   http.StatusAccepted,
	}
	for outcome, want := range outcomes {
		f := &fakeLifecycle{resp: &lifecyclev1.AcceptGitHubDeliveryResponse{Outcome: outcome}}
		h := github.NewHandler(docSecret, f, slogx.Discard())
		rec := post(t, h, "pull_request", "d-1", `{"action":"closed"}`, true)
		require.Equal(t, want, rec.Code, "%s: %s", outcome, rec.Body)
		require.Len(t, f.got, 1)
		require.Equal(t, "d-1", f.got[0].GetDeliveryId())
		require.Equal(t, "pull_request", f.got[0].GetEvent())
		require.JSONEq(t, `{"action":"closed"}`, string(f.got[0].GetPayload()))
	}

	f := &fakeLifecycle{err: status.Error(codes.Unavailable, "lifecycle is down")}
	h := github.NewHandler(docSecret, f, slogx.Discard())
	require.Equal(t, http.StatusServiceUnavailable, post(t, h, "pull_request", "d-2", `{}`, true).Code)
	f.err = status.Error(codes.InvalidArgument, "the pull_request payload is not JSON")
	require.Equal(t, http.StatusBadRequest, post(t, h, "pull_request", "d-3", `{`, true).Code)

	f = &fakeLifecycle{}
	h = github.NewHandler(docSecret, f, slogx.Discard())
	require.Equal(t, http.StatusUnauthorized, post(t, h, "pull_request", "d-4", `{}`, false).Code)
	require.Equal(t, http.StatusBadRequest, post(t, h, "", "d-5", `{}`, true).Code, "no event")
	require.Equal(t, http.StatusBadRequest, post(t, h, "pull_request", "", `{}`, true).Code, "no delivery id")
	require.Equal(t, http.StatusOK, post(t, h, "ping", "d-6", `{"zen":"Design for failure."}`, true).Code)
	require.Empty(t, f.got, "nothing unverified, incomplete or a ping reaches lifecycle")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, github.Route, nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}
