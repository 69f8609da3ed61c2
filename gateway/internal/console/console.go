// Package console is the operator console: the web pages where the one
// human the console speaks for (ZIMMER_ADMIN_USER) signs in, sees what
// waits for them and answers it. The gateway serves it under /console/,
// server-rendered with html/template and a vendored htmx, no build step
// (docs/console.md says why it lives here).
//
// The console is a principal of its own (docs/security.md): its human
// signs in with the console's password, never an API key or a session
// credential, and its cookie opens /console/ only. It calls the services
// over connections of its own, as the service "console", so a line its own
// call writes on a timeline says "(by the console)" and lineage believes
// the human boundary it declares: what the human types is recorded as their
// human message (platform/boundary), and no API route can do the same.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

const (
	// Prefix is the console's path prefix.
	Prefix = "/console/"
	// PasswordHashEnv and AdminUserEnv configure it (config.Config).
	PasswordHashEnv = "ZIMMER_CONSOLE_PASSWORD_HASH"
	AdminUserEnv    = "ZIMMER_ADMIN_USER"
	// DisabledMessage is the 503 page's text when no password is set.
	DisabledMessage = "The console is disabled: set " + PasswordHashEnv + " on the gateway (a bcrypt hash; make run sets it from the password it prints)."
	// maxFormBytes bounds a form: a prompt is at most 500,000 characters.
	maxFormBytes = 4 << 20
	// loginCookieName carries the sign-in form's CSRF token before there
	// is a sign-in to hold one (a double-submitted cookie).
	loginCookieName = "zimmer_console_login"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Clients are the services the console calls, over connections that
// identify it as the service "console" and forward no client principal.
type Clients struct {
	Lifecycle  lifecyclev1.LifecycleServiceClient
	Queue      queuev1.QueueServiceClient
	Runner     runnerv1.RunnerServiceClient
	Provenance lineagev1.ProvenanceServiceClient
	// Triggers are lifecycle's wake-ups (Pause Until, the session page's
	// triggers); Notifications the inbox, the alerts and the Slack triggers
	// page (nil leaves that page saying the service is not configured).
	Triggers      lifecyclev1.TriggerServiceClient
	Notifications notificationv1.NotificationServiceClient
	// SignIns are lineage's, shared by every gateway replica; required when
	// the console is enabled.
	SignIns lineagev1.ConsoleSignInServiceClient
}

// Options configure the console.
type Options struct {
	// AdminUser is ZIMMER_ADMIN_USER: the roster key of the human the
	// console speaks for, and the user name they sign in with.
	AdminUser string
	// PasswordHash is ZIMMER_CONSOLE_PASSWORD_HASH, a bcrypt hash; empty
	// disables the console (every page answers 503 saying so).
	PasswordHash string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// ValidatePasswordHash reports why hash cannot be the console's password
// hash. Empty (disabled) is fine.
func ValidatePasswordHash(hash string) error {
	if hash == "" {
		return nil
	}
	if _, err := bcrypt.Cost([]byte(hash)); err != nil {
		return fmt.Errorf("%s: want a bcrypt hash ($2a$/$2b$…), e.g. from `htpasswd -nbBC 12 '' password | cut -d: -f2`: %w", PasswordHashEnv, err)
	}
	return nil
}

// DeclareWebUI is the console connections' interceptor: every call says
// it entered Zimmer through the web UI (platform/surface), which lifecycle
// names on the lines it writes ("moved to trash by a user in the web UI").
func DeclareWebUI(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(surface.Outgoing(ctx, surface.WebUI), method, req, reply, cc, opts...)
}

// DeclareWebUIStream is DeclareWebUI for streams.
func DeclareWebUIStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(surface.Outgoing(ctx, surface.WebUI), desc, cc, method, opts...)
}

// Handler serves the console.
type Handler struct {
	clients Clients
	opts    Options
	logger  *slog.Logger
	signIns signIns
	pages   map[string]*template.Template
	// liveTemplate renders the dashboard's live parts and the cards'
	// answers (cards.html).
	liveTemplate *template.Template
	// liveSlots bounds the live pages (MaxLiveDashboards).
	liveSlots chan struct{}
	// liveCtx ends every live dashboard when the gateway stops (StopLive).
	liveCtx  context.Context
	StopLive context.CancelFunc
	mux      *http.ServeMux
	// streams bounds the transcript streams open at once (a slot each).
	streams chan struct{}
}

// New returns the console over clients.
func New(clients Clients, opts Options, logger *slog.Logger) (*Handler, error) {
	if err := ValidatePasswordHash(opts.PasswordHash); err != nil {
		return nil, err
	}
	if opts.PasswordHash != "" && opts.AdminUser == "" {
		return nil, fmt.Errorf("%s is empty: the console signs in the human it names", AdminUserEnv)
	}
	if opts.PasswordHash != "" && clients.SignIns == nil {
		return nil, errors.New("the console keeps its sign-ins in lineage: give it a ConsoleSignInService client")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Handler{clients: clients, opts: opts, logger: logger,
		signIns: signIns{client: clients.SignIns}, pages: map[string]*template.Template{},
		streams:   make(chan struct{}, MaxTranscriptStreams),
		liveSlots: make(chan struct{}, MaxLiveDashboards)}
	h.liveCtx, h.StopLive = context.WithCancel(context.Background())
	funcs := template.FuncMap{"age": h.age, "statusWords": statusWords, "at": at, "inZone": inZone, "size": size, "details": alertDetails,
		"pending": pending, "add": func(a, b int32) int32 { return a + b }, "costRows": costRows}
	for _, page := range []string{"login", "dashboard", "session", "new", "problem", "inbox", "alerts", "slack", "costs", "ranked"} {
		files := []string{"templates/layout.html", "templates/" + page + ".html"}
		switch page {
		case "dashboard":
			files = append(files, "templates/cards.html")
		case "session":
			files = append(files, "templates/elicitation.html") // its partial (elicitation.go)
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, files...)
		if err != nil {
			return nil, fmt.Errorf("parse the console's %s page: %w", page, err)
		}
		h.pages[page] = t
	}
	// The drawer is the session page's content without the layout.
	drawer, err := template.New("drawer.html").Funcs(funcs).ParseFS(templateFS, "templates/drawer.html", "templates/session.html", "templates/elicitation.html")
	if err != nil {
		return nil, fmt.Errorf("parse the console's drawer: %w", err)
	}
	h.pages["drawer"] = drawer
	if h.liveTemplate, err = template.New("cards.html").Funcs(funcs).ParseFS(templateFS, "templates/cards.html"); err != nil {
		return nil, fmt.Errorf("parse the console's cards: %w", err)
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", staticFiles(static)))
	mux.HandleFunc("GET /console/login", h.loginPage)
	mux.HandleFunc("POST /console/login", h.login)
	mux.HandleFunc("POST /console/logout", h.mutating(h.logout))
	mux.HandleFunc("GET /console/{$}", h.signedIn(h.dashboard))
	mux.HandleFunc("GET /console/live", h.live)
	mux.HandleFunc("POST /console/refresh-all", h.mutating(h.refreshAll))
	mux.HandleFunc("POST /console/refresh-starred", h.mutating(h.refreshStarred))
	mux.HandleFunc("POST /console/categories/{cid}/refresh", h.mutating(h.refreshCategory))
	mux.HandleFunc("POST /console/sessions/{id}/star", h.mutating(h.star))
	mux.HandleFunc("POST /console/sessions/{id}/category", h.mutating(h.moveToCategory))
	mux.HandleFunc("POST /console/quick-prompt", h.mutating(h.quickPrompt))
	mux.HandleFunc("POST /console/sessions/{id}/refresh", h.mutating(h.refresh))
	mux.HandleFunc("POST /console/sessions/{id}/trash", h.mutating(h.trash))
	mux.HandleFunc("POST /console/sessions/{id}/undo-trash", h.mutating(h.undoTrash))
	mux.HandleFunc("GET /console/sessions/{id}/drawer", h.signedIn(h.sessionPage))
	mux.HandleFunc("GET /console/sessions/new", h.signedIn(h.newSessionPage))
	mux.HandleFunc("POST /console/sessions", h.mutating(h.createSession))
	mux.HandleFunc("GET /console/sessions/{id}", h.signedIn(h.sessionPage))
	mux.HandleFunc("POST /console/sessions/{id}/follow-up", h.mutating(h.followUp))
	mux.HandleFunc("POST /console/sessions/{id}/enqueue", h.mutating(h.enqueue))
	mux.HandleFunc("POST /console/sessions/{id}/elicitations/{eid}/answer", h.mutating(h.answerElicitation))
	mux.HandleFunc("POST /console/sessions/{id}/pause", h.mutating(h.sessionAction("pause", h.pause)))
	mux.HandleFunc("POST /console/sessions/{id}/restore", h.mutating(h.sessionAction("restore", h.restore)))
	mux.HandleFunc("POST /console/sessions/{id}/archive", h.mutating(func(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
		h.sessionAction("archive", h.archive(r.PostForm.Get("force") != ""))(w, r, cookie, in)
	}))
	h.sessionRoutes(mux)
	h.rankedRoutes(mux)
	h.inboxRoutes(mux)
	mux.HandleFunc("GET /console/slack/triggers", h.signedIn(h.slackTriggersPage))
	mux.HandleFunc("POST /console/slack/triggers", h.mutating(h.createSlackTrigger))
	mux.HandleFunc("POST /console/slack/triggers/{id}/delete", h.mutating(h.deleteSlackTrigger))
	mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		h.problem(w, r, http.StatusNotFound, fmt.Sprintf("There is no console page %s %s.", r.Method, r.URL.Path))
	})
	mux.HandleFunc("/console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
	})
	h.mux = mux
	return h, nil
}

// ServeHTTP serves every console request with the headers that keep its
// pages to themselves: no framing, no script or style but its own files,
// no caching of what a signed-in human saw.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/console/static/") {
		hdr.Set("Cache-Control", "no-store")
	}
	if h.opts.PasswordHash == "" && !strings.HasPrefix(r.URL.Path, "/console/static/") {
		h.problem(w, r, http.StatusServiceUnavailable, DisabledMessage)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		h.problem(w, r, http.StatusForbidden, "This form came from another site (its Origin is not this console's), so it was refused.")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// sameOrigin refuses a mutating request a browser says came from another
// origin: defense in depth beside the CSRF token. A request without an
// Origin header (an older browser, a non-browser client) is left to the
// token.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func staticFiles(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The file names carry their versions, so a browser may keep them.
		w.Header().Set("Cache-Control", "public, max-age=86400")
		fileServer.ServeHTTP(w, r)
	})
}

// page is what every template gets.
type page struct {
	Title string
	// CSRF is the sign-in's token for the page's forms; empty when signed
	// out.
	CSRF      string
	AdminUser string
	// RosterWarning says why nothing the human types is recorded, when
	// that is so.
	RosterWarning string
	Flash         string
	// Unread is the inbox's unread count, shown in the header.
	Unread int32
	Data   any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	p.AdminUser = h.opts.AdminUser
	var b strings.Builder
	if err := h.pages[name].Execute(&b, p); err != nil {
		h.logger.ErrorContext(r.Context(), "render console page", "page", name, "error", err)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("internal error"))
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// problem answers a page saying what went wrong.
func (h *Handler) problem(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "problem", page{Title: http.StatusText(status), Data: msg})
}

// secure reports whether the browser reached the console over TLS (here or
// at a proxy in front), when the cookies must say Secure.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (h *Handler) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode}
}

// signedIn lets a request through only with a live sign-in; a page asked
// for signed out leads to the sign-in form. API keys and session
// credentials are not looked at: they never open the console.
func (h *Handler) signedIn(next func(http.ResponseWriter, *http.Request, string, signIn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var cookie string
		if c, err := r.Cookie(CookieName); err == nil {
			cookie = c.Value
		}
		in, err := h.signIns.get(r.Context(), cookie, true)
		if err != nil && !errors.Is(err, errSignedOut) {
			h.failed(w, r, "lineage", err)
			return
		}
		if err != nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/console/login", http.StatusSeeOther)
				return
			}
			h.problem(w, r, http.StatusUnauthorized, "You are signed out. Sign in again, then repeat what you did.")
			return
		}
		next(w, r, cookie, in)
	}
}

// mutating is signedIn for a form that changes something: it must carry
// the sign-in's CSRF token.
func (h *Handler) mutating(next func(http.ResponseWriter, *http.Request, string, signIn)) http.HandlerFunc {
	return h.signedIn(func(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				h.problem(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
				return
			}
			h.problem(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !equal(r.PostForm.Get("csrf"), in.csrf) {
			h.problem(w, r, http.StatusForbidden, "This form's security token is missing or stale (CSRF protection), so nothing was done. Reload the page and try again.")
			return
		}
		next(w, r, cookie, in)
	})
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		if _, err := h.signIns.get(r.Context(), c.Value, true); err == nil {
			http.Redirect(w, r, Prefix, http.StatusSeeOther)
			return
		}
	}
	h.renderLogin(w, r, http.StatusOK, "")
}

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	token := randomToken()
	http.SetCookie(w, h.cookie(r, loginCookieName, token, 3600))
	h.render(w, r, status, "login", page{Title: "Sign in", CSRF: token, Data: msg})
}

// WrongCredentials is the sign-in form's answer to a wrong user or
// password; it does not say which.
const WrongCredentials = "Wrong user name or password."

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		h.problem(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	c, err := r.Cookie(loginCookieName)
	if err != nil || !equal(r.PostForm.Get("csrf"), c.Value) {
		h.renderLogin(w, r, http.StatusForbidden, "The sign-in form was stale (CSRF protection). Try again.")
		return
	}
	addr := clientAddr(r)
	wait, err := h.signIns.attempt(r.Context(), addr)
	if err != nil {
		h.failed(w, r, "lineage", err)
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		h.renderLogin(w, r, http.StatusTooManyRequests,
			fmt.Sprintf("Too many wrong passwords from your address: try again in %s.", wait.Round(time.Second)))
		return
	}
	// The password is checked whatever the user name, so that the time
	// taken does not tell a right name from a wrong one.
	passwordOK := bcrypt.CompareHashAndPassword([]byte(h.opts.PasswordHash), []byte(r.PostForm.Get("password"))) == nil
	if !equal(r.PostForm.Get("user"), h.opts.AdminUser) || !passwordOK {
		h.logger.WarnContext(r.Context(), "console sign-in refused", "remote_addr", addr)
		h.renderLogin(w, r, http.StatusUnauthorized, WrongCredentials)
		return
	}
	if err := h.signIns.clearAttempts(r.Context(), addr); err != nil {
		h.failed(w, r, "lineage", err)
		return
	}
	cookie, ttl, err := h.signIns.start(r.Context())
	if err != nil {
		h.failed(w, r, "lineage", err)
		return
	}
	http.SetCookie(w, h.cookie(r, CookieName, cookie, int(ttl.Seconds())))
	http.SetCookie(w, h.cookie(r, loginCookieName, "", -1))
	h.logger.InfoContext(r.Context(), "console sign-in", "user", h.opts.AdminUser, "remote_addr", addr)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
	// Sign-out must be final: if lineage cannot end the sign-in, say so
	// rather than clear only this browser's copy of the cookie.
	if err := h.signIns.end(r.Context(), cookie); err != nil {
		h.failed(w, r, "lineage", err)
		return
	}
	http.SetCookie(w, h.cookie(r, CookieName, "", -1))
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// age is how long ago t was, in the largest unit that fits.
func (h *Handler) age(t time.Time) string {
	d := h.opts.Now().Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// statusWords is a status word for a human ("needs_input" → "needs input").
func statusWords(s string) string { return strings.ReplaceAll(s, "_", " ") }
