// Package github reads pull requests through GitHub's REST API
// (https://docs.github.com/en/rest, version 2022-11-28), for the watches
// of the sessions' pull requests (LC-34):
//
//   - GET /repos/{owner}/{repo}/pulls/{pull_number}: state ("open",
//     "closed"), merged, mergeable (null while GitHub computes it),
//     mergeable_state ("dirty" is a merge conflict), head.sha, base.ref;
//   - GET /repos/{owner}/{repo}/pulls/{pull_number}/comments: the review
//     comments, oldest first (sort=created, direction=asc), 100 a page;
//   - GET /repos/{owner}/{repo}/issues/{issue_number}/comments: the
//     comments of the pull request's conversation tab (a pull request is an
//     issue to this endpoint), in ascending id order, 100 a page;
//   - GET /repos/{owner}/{repo}/commits/{ref}/check-runs: the head
//     commit's check runs (filter=latest), with status, conclusion and
//     output.title / output.summary.
//
// Every request carries the token as a Bearer header; the token is never
// logged or put in an error.
package github

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// DefaultAPIURL is github.com's REST API.
const DefaultAPIURL = "https://api.github.com"

const (
	apiVersion = "2022-11-28"
	perPage    = 100
	// maxPages bounds one reading's comments: a thousand new review
	// comments between two readings is more than a session reads anyway,
	// and the next reading goes on from the last one passed on.
	maxPages = 10
	// maxBody bounds one answer.
	maxBody = 8 << 20
)

// Client is the REST client. It implements app.GitHub.
type Client struct {
	// BaseURL is the API's root, DefaultAPIURL unless a GitHub Enterprise
	// Server's (https://HOST/api/v3) or a test's.
	BaseURL string
	// Tokens authenticates each request: a token given whole
	// (StaticToken), or a GitHub App's installation token, minted and
	// renewed (AppInstallation).
	Tokens TokenSource
	HTTP   *http.Client
}

// TokenSource gives the token a request is made with.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is a token given whole (GITHUB_TOKEN).
type StaticToken string

// Token implements TokenSource.
func (t StaticToken) Token(context.Context) (string, error) { return string(t), nil }

var _ app.GitHub = (*Client)(nil)

// NewClient returns a client of the API at baseURL ("" is github.com).
func NewClient(baseURL string, tokens TokenSource, timeout time.Duration) *Client {
	if baseURL == "" {
		baseURL = DefaultAPIURL
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Tokens: tokens, HTTP: &http.Client{Timeout: timeout}}
}

type pullAnswer struct {
	State          string `json:"state"`
	Merged         bool   `json:"merged"`
	Mergeable      *bool  `json:"mergeable"`
	MergeableState string `json:"mergeable_state"`
	Head           struct {
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

type commentAnswer struct {
	ID   int64 `json:"id"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	Path    string `json:"path"`
	Line    *int   `json:"line"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
}

type checkRunsAnswer struct {
	CheckRuns []struct {
		ID         int64  `json:"id"`
		Name       string `json:"name"`
		Status     string `json:"status"`
		Conclusion string `json:"conclusion"`
		HTMLURL    string `json:"html_url"`
		Output     struct {
			Title   string `json:"title"`
			Summary string `json:"summary"`
		} `json:"output"`
	} `json:"check_runs"`
}

// ReadPullRequest implements app.GitHub: the pull request, its review
// comments after commentsAfter, its conversation's comments after
// issueCommentsAfter, and its head commit's failed check runs.
// A 404 is app.ErrPullRequestGone.
func (c *Client) ReadPullRequest(ctx context.Context, pr rules.PullRequestRef, commentsAfter, issueCommentsAfter int64) (domain.PullRequestReading, error) {
	repo := "/repos/" + url.PathEscape(pr.Owner) + "/" + url.PathEscape(pr.Repo)
	var p pullAnswer
	if err := c.get(ctx, repo+"/pulls/"+strconv.Itoa(pr.Number), nil, &p); err != nil {
		return domain.PullRequestReading{}, err
	}
	r := domain.PullRequestReading{State: p.State, Merged: p.Merged, Mergeable: p.Mergeable, MergeableState: p.MergeableState, BaseRef: p.Base.Ref}
	if p.Merged || p.State == "closed" {
		return r, nil
	}
	for page := 1; page <= maxPages; page++ {
		var cs []commentAnswer
		q := url.Values{"sort": {"created"}, "direction": {"asc"}, "per_page": {strconv.Itoa(perPage)}, "page": {strconv.Itoa(page)}}
		if err := c.get(ctx, repo+"/pulls/"+strconv.Itoa(pr.Number)+"/comments", q, &cs); err != nil {
			return domain.PullRequestReading{}, err
		}
		for _, a := range cs {
			if a.ID <= commentsAfter {
				continue
			}
			rc := domain.ReviewComment{ID: a.ID, Author: a.User.Login, Path: a.Path, Body: a.Body, HTMLURL: a.HTMLURL}
			if a.Line != nil {
				rc.Line = *a.Line
			}
			r.Comments = append(r.Comments, rc)
		}
		if len(cs) < perPage {
			break
		}
	}
	for page := 1; page <= maxPages; page++ {
		var cs []commentAnswer
		q := url.Values{"per_page": {strconv.Itoa(perPage)}, "page": {strconv.Itoa(page)}}
		if err := c.get(ctx, repo+"/issues/"+strconv.Itoa(pr.Number)+"/comments", q, &cs); err != nil {
			return domain.PullRequestReading{}, err
		}
		for _, a := range cs {
			if a.ID > issueCommentsAfter {
				r.IssueComments = append(r.IssueComments, domain.IssueComment{ID: a.ID, Author: a.User.Login, Body: a.Body, HTMLURL: a.HTMLURL})
			}
		}
		if len(cs) < perPage {
			break
		}
	}
	if p.Head.SHA != "" {
		var runs checkRunsAnswer
		q := url.Values{"filter": {"latest"}, "per_page": {strconv.Itoa(perPage)}}
		if err := c.get(ctx, repo+"/commits/"+url.PathEscape(p.Head.SHA)+"/check-runs", q, &runs); err != nil {
			return domain.PullRequestReading{}, err
		}
		for _, run := range runs.CheckRuns {
			if run.Status != "completed" || !domain.CheckFailed(run.Conclusion) {
				continue
			}
			r.FailedChecks = append(r.FailedChecks, domain.CheckRun{ID: run.ID, Name: run.Name, Conclusion: run.Conclusion,
				Title: run.Output.Title, Summary: run.Output.Summary, HTMLURL: run.HTMLURL})
		}
	}
	return r, nil
}

// get GETs path and decodes the JSON answer into out.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	u := c.BaseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GitHub GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", "zimmer")
	token, err := c.Tokens.Token(ctx)
	if err != nil {
		return fmt.Errorf("GitHub GET %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("GitHub GET %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("GitHub GET %s: read the answer: %w", path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("GitHub GET %s: 404 (%s): %w", path, githubMessage(body), app.ErrPullRequestGone)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GitHub GET %s: %s (%s)", path, resp.Status, githubMessage(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GitHub GET %s: the answer is not the documented JSON: %w", path, err)
	}
	return nil
}

// githubMessage is the "message" of GitHub's error answer.
func githubMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return "no message"
}
