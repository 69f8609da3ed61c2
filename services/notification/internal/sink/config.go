package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
)

// Config is the sinks' configuration from the environment. The two routes
// name the sinks pushes and alerts go to, so pages and pushes can reach
// different places; each named sink must have its settings.
type Config struct {
	PushRoute  []string `env:"NOTIFICATION_SINKS, default=log"`
	AlertRoute []string `env:"ZIMMER_ALERT_SINKS, default=log"`

	WebhookURL    string `env:"NOTIFICATION_WEBHOOK_URL"`
	WebhookSecret string `env:"NOTIFICATION_WEBHOOK_SECRET"`

	NtfyURL   string `env:"NOTIFICATION_NTFY_URL, default=https://ntfy.sh"`
	NtfyTopic string `env:"NOTIFICATION_NTFY_TOPIC"`
	NtfyToken string `env:"NOTIFICATION_NTFY_TOKEN"`

	SlackWebhookURL string `env:"NOTIFICATION_SLACK_WEBHOOK_URL"`

	SMTPAddr     string   `env:"NOTIFICATION_SMTP_ADDR"`
	SMTPFrom     string   `env:"NOTIFICATION_SMTP_FROM"`
	SMTPTo       []string `env:"NOTIFICATION_SMTP_TO"`
	SMTPUsername string   `env:"NOTIFICATION_SMTP_USERNAME"`
	SMTPPassword string   `env:"NOTIFICATION_SMTP_PASSWORD"`

	// Timeout bounds one delivery (an HTTP request, an SMTP conversation);
	// Temporal retries after it.
	Timeout time.Duration `env:"NOTIFICATION_SINK_TIMEOUT, default=10s"`
}

// LoadConfig reads the sinks' configuration from getenv.
func LoadConfig(ctx context.Context, getenv func(string) string) (Config, error) {
	var c Config
	if err := envcfg.Load(ctx, getenv, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LogValue keeps the webhook secret, the ntfy token, the Slack webhook URL
// (it is the credential) and the SMTP password out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("push_route", c.PushRoute),
		slog.Any("alert_route", c.AlertRoute),
		slog.String("webhook_url", c.WebhookURL),
		slog.String("ntfy_url", c.NtfyURL),
		slog.String("smtp_addr", c.SMTPAddr),
		slog.Duration("timeout", c.Timeout),
	)
}

// Routes are the built sinks of each route.
type Routes struct {
	Push  []Sink
	Alert []Sink
}

// New builds the sinks both routes name, failing with every missing or bad
// setting of an enabled sink (named by its variable) so one restart fixes
// them all.
func New(c Config, logger *slog.Logger) (Routes, error) {
	client := &http.Client{Timeout: c.Timeout}
	built := map[string]Sink{}
	var errs []error
	build := func(name string) Sink {
		if s, ok := built[name]; ok {
			return s
		}
		s, err := c.build(name, logger, client)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		built[name] = s
		return s
	}
	route := func(variable string, names []string) []Sink {
		var sinks []Sink
		seen := map[string]bool{}
		for _, raw := range names {
			name := strings.ToLower(strings.TrimSpace(raw))
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			if !slices.Contains(Names, name) {
				errs = append(errs, fmt.Errorf("%s: unknown sink %q (known: %s)", variable, name, strings.Join(Names, ", ")))
				continue
			}
			if s := build(name); s != nil {
				sinks = append(sinks, s)
			}
		}
		return sinks
	}
	r := Routes{
		Push:  route("NOTIFICATION_SINKS", c.PushRoute),
		Alert: route("ZIMMER_ALERT_SINKS", c.AlertRoute),
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("NOTIFICATION_SINK_TIMEOUT must be positive, got %s", c.Timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return Routes{}, fmt.Errorf("configure notification sinks: %w", err)
	}
	return r, nil
}

// Names are the sinks a route may name.
var Names = []string{"log", "webhook", "ntfy", "slack", "email"}

func (c Config) build(name string, logger *slog.Logger, client *http.Client) (Sink, error) {
	var errs []error
	require := func(variable, value string) {
		if strings.TrimSpace(value) == "" {
			errs = append(errs, fmt.Errorf("sink %q is enabled but %s is not set", name, variable))
		}
	}
	requireURL := func(variable, value string) {
		require(variable, value)
		if value == "" {
			return
		}
		if u, err := url.Parse(value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("sink %q: %s must be an http(s) URL", name, variable))
		}
	}
	var s Sink
	switch name {
	case "log":
		s = Log{Logger: logger}
	case "webhook":
		requireURL("NOTIFICATION_WEBHOOK_URL", c.WebhookURL)
		require("NOTIFICATION_WEBHOOK_SECRET", c.WebhookSecret)
		s = Webhook{URL: c.WebhookURL, Secret: []byte(c.WebhookSecret), Client: client}
	case "ntfy":
		requireURL("NOTIFICATION_NTFY_URL", c.NtfyURL)
		require("NOTIFICATION_NTFY_TOPIC", c.NtfyTopic)
		s = Ntfy{ServerURL: c.NtfyURL, Topic: c.NtfyTopic, Token: c.NtfyToken, Client: client}
	case "slack":
		requireURL("NOTIFICATION_SLACK_WEBHOOK_URL", c.SlackWebhookURL)
		s = Slack{WebhookURL: c.SlackWebhookURL, Client: client}
	case "email":
		require("NOTIFICATION_SMTP_ADDR", c.SMTPAddr)
		if c.SMTPAddr != "" {
			if _, _, err := net.SplitHostPort(c.SMTPAddr); err != nil {
				errs = append(errs, fmt.Errorf("sink %q: NOTIFICATION_SMTP_ADDR must be host:port: %w", name, err))
			}
		}
		require("NOTIFICATION_SMTP_FROM", c.SMTPFrom)
		to := slices.DeleteFunc(slices.Clone(c.SMTPTo), func(s string) bool { return strings.TrimSpace(s) == "" })
		for i := range to {
			to[i] = strings.TrimSpace(to[i])
		}
		if len(to) == 0 {
			errs = append(errs, fmt.Errorf("sink %q is enabled but NOTIFICATION_SMTP_TO is not set", name))
		}
		if c.SMTPPassword != "" && c.SMTPUsername == "" {
			errs = append(errs, fmt.Errorf("sink %q: NOTIFICATION_SMTP_PASSWORD is set without NOTIFICATION_SMTP_USERNAME", name))
		}
		s = Email{Addr: c.SMTPAddr, From: c.SMTPFrom, To: to, Username: c.SMTPUsername, Password: c.SMTPPassword, Timeout: c.Timeout}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}
