package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTranscriptOfARunningTurn follows a demo agent's turn over REST as
// server-sent events while it runs, then reads the kept transcript: the
// whole chain from the agent's stdout through the turn's sink, the runner's
// store and API, to the gateway.
func TestTranscriptOfARunningTurn(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say first words\n@demo sleep 2s\n@demo say last words")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/v1/sessions/%d/transcript?follow=true", api.base, id), nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", s.apiKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	// Events until the agent's last words, in the order it said them.
	var said []string
	rd := bufio.NewReader(resp.Body)
	for !strings.Contains(strings.Join(said, "\n"), "last words") {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "the follow ended before the last words; so far: %q", said)
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			var l struct{ Text, Kind string }
			require.NoError(t, json.Unmarshal([]byte(data), &l), data)
			said = append(said, l.Text)
		}
	}
	first := strings.Index(strings.Join(said, "\n"), "first words")
	require.GreaterOrEqual(t, first, 0, "the first words came first: %q", said)
	require.Less(t, first, strings.Index(strings.Join(said, "\n"), "last words"))
	cancel()

	api.waitStatus(t, id, "needs_input")
	code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var page struct {
		Turns []struct {
			TurnID      string `json:"turn_id"`
			StoredLines int    `json:"stored_lines"`
		}
		Lines []struct {
			TurnID string `json:"turn_id"`
			Seq    int
			Text   string
		}
		NextPageToken string `json:"next_page_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page), body)
	require.Len(t, page.Turns, 1, body)
	require.Equal(t, len(page.Lines), page.Turns[0].StoredLines)
	require.Empty(t, page.NextPageToken)
	var texts []string
	for i, l := range page.Lines {
		require.Equal(t, page.Turns[0].TurnID, l.TurnID)
		require.Equal(t, i+1, l.Seq)
		texts = append(texts, l.Text)
	}
	require.Contains(t, strings.Join(texts, "\n"), "first words")
	require.Contains(t, strings.Join(texts, "\n"), "last words")
}
