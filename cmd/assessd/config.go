package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/store"
)

// config is the process configuration: environment variables, overridden
// by flags of the same name in kebab-case (API.md).
type config struct {
	Addr              string
	BaseURL           string
	DatabaseURL       string
	DatabaseDirectURL string
	RedisURL          string
	TemporalAddress   string
	TemporalNamespace string
	MediaCDN          string
	// The database timeouts (decision 0148): a request's wait for a
	// pooled connection, a statement's run, its wait for a lock.
	DatabaseAcquireTimeout   string
	DatabaseStatementTimeout string
	DatabaseLockTimeout      string
	// MediaMaxUploadBytes bounds an uploaded answer file (decision 0121).
	MediaMaxUploadBytes string
	// WorkerMemoryBytes bounds the large buffers of a worker process
	// (decision 0174).
	WorkerMemoryBytes string
	// WebhookAllowPrivate lifts the webhook address rule (development).
	WebhookAllowPrivate string
	AIProvider          string
	AIGlobalURL         string
	AIEUURL             string
	AIAPIKey            string
	AIModel             string
	LogLevel            string
	TrustedProxies      string
	MetricsAddr         string

	// Temporal security: mTLS files, a CA for the server, the server name
	// to verify, an API key (a secret), and whether to register a missing
	// namespace.
	TemporalTLSCert, TemporalTLSKey, TemporalTLSCA, TemporalTLSServerName string
	TemporalAPIKey, TemporalCreateNamespace                               string
	// TemporalGRPCCompression is gzip (the SDK's default, for a server
	// across a network that charges by the byte) or none (a server in the
	// same cluster: compression only costs both sides CPU).
	TemporalGRPCCompression string
}

type setting struct {
	env, help string
	target    *string
	fallback  string
}

func (c *config) settings() []setting {
	return []setting{
		{"ASSESSD_ADDR", "listen address", &c.Addr, "127.0.0.1:8080"},
		{"ASSESSD_BASE_URL", "public base URL and OIDC issuer (default http://<addr>)", &c.BaseURL, ""},
		{"DATABASE_URL", "PostgreSQL connection URL", &c.DatabaseURL, ""},
		{"ASSESSD_DATABASE_DIRECT_URL", "unpooled PostgreSQL URL (no transaction-pooling PgBouncer) for LISTEN and migrations (default DATABASE_URL)", &c.DatabaseDirectURL, ""},
		{"ASSESSD_DATABASE_ACQUIRE_TIMEOUT", "longest wait for a connection of the PostgreSQL pool before a request is answered 503 DATABASE_UNAVAILABLE, e.g. 5s", &c.DatabaseAcquireTimeout, store.DefaultAcquireTimeout.String()},
		{"ASSESSD_DATABASE_STATEMENT_TIMEOUT", "longest run of one SQL statement before it fails DATABASE_UNAVAILABLE (503)", &c.DatabaseStatementTimeout, store.DefaultStatementTimeout.String()},
		{"ASSESSD_DATABASE_LOCK_TIMEOUT", "longest wait of one SQL statement for a lock another transaction holds before it fails DATABASE_UNAVAILABLE (503)", &c.DatabaseLockTimeout, store.DefaultLockTimeout.String()},
		{"REDIS_URL", "Redis URL for embed sessions, e.g. redis://127.0.0.1:6379/0", &c.RedisURL, ""},
		{"TEMPORAL_ADDRESS", "Temporal frontend host:port", &c.TemporalAddress, ""},
		{"TEMPORAL_NAMESPACE", "Temporal namespace", &c.TemporalNamespace, "default"},
		{"TEMPORAL_TLS_CERT", "client certificate file (PEM) for mTLS to Temporal", &c.TemporalTLSCert, ""},
		{"TEMPORAL_TLS_KEY", "client key file (PEM) for mTLS to Temporal", &c.TemporalTLSKey, ""},
		{"TEMPORAL_TLS_CA", "CA file (PEM) verifying the Temporal server; turns TLS on", &c.TemporalTLSCA, ""},
		{"TEMPORAL_TLS_SERVER_NAME", "server name to verify on the Temporal certificate; turns TLS on", &c.TemporalTLSServerName, ""},
		{"TEMPORAL_API_KEY", "Temporal Cloud API key (secret); turns TLS on", &c.TemporalAPIKey, ""},
		{"TEMPORAL_CREATE_NAMESPACE", "register the namespace at start-up when it is missing (true or false)", &c.TemporalCreateNamespace, "false"},
		{"TEMPORAL_GRPC_COMPRESSION", "compression of calls to Temporal: gzip, or none for a server in the same cluster", &c.TemporalGRPCCompression, "gzip"},
		{"ASSESSD_MEDIA_CDN", "comma-separated URL prefixes of the media CDN (grading files, answer-sheet scans); <base URL>/media/ always counts", &c.MediaCDN, ""},
		{"ASSESSD_MEDIA_MAX_UPLOAD_BYTES", "size limit in bytes of an answer file a student uploads", &c.MediaMaxUploadBytes, strconv.Itoa(media.DefaultMaxUploadBytes)},
		{"ASSESSD_WORKER_MEMORY_BYTES", "bytes of answer files, scan files and decoded page images a worker process holds at once; work past it waits its turn", &c.WorkerMemoryBytes, strconv.Itoa(membudget.DefaultWorkerBytes)},
		{"ASSESSD_WEBHOOK_ALLOW_PRIVATE", "let webhook endpoints use http and private, loopback or link-local addresses (true or false; local development and tests only)", &c.WebhookAllowPrivate, "false"},
		{"ASSESSD_AI_PROVIDER", "builtin or openai", &c.AIProvider, "builtin"},
		{"ASSESSD_AI_GLOBAL_URL", "OpenAI-compatible base URL of the global region", &c.AIGlobalURL, ""},
		{"ASSESSD_AI_EU_URL", "OpenAI-compatible base URL of the EU region", &c.AIEUURL, ""},
		{"ASSESSD_AI_API_KEY", "AI provider API key", &c.AIAPIKey, ""},
		{"ASSESSD_AI_MODEL", "AI model name", &c.AIModel, "gpt-4o-mini"},
		{"ASSESSD_LOG_LEVEL", "debug, info, warn or error", &c.LogLevel, "info"},
		{"ASSESSD_TRUSTED_PROXIES", "comma-separated CIDRs of proxies whose X-Forwarded-For is believed", &c.TrustedProxies, ""},
		{"ASSESSD_METRICS_ADDR", "listen address of the worker's /metrics and /healthz", &c.MetricsAddr, "127.0.0.1:9091"},
	}
}

// newFlagSet returns a flag set for command name with the configuration
// flags registered on it.
func (c *config) newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, s := range c.settings() {
		def := s.fallback
		if v, ok := os.LookupEnv(s.env); ok {
			def = v
		}
		name := strings.ReplaceAll(strings.ToLower(s.env), "_", "-")
		fs.StringVar(s.target, name, def, s.help+" ($"+s.env+")")
		// Help and usage errors print DefValue: never a secret.
		fs.Lookup(name).DefValue = shown(s.env, def)
	}
	return fs
}

// secretSuffixes mark settings whose whole value is a secret; they are
// never shown. Settings holding URLs are shown with the password masked.
var secretSuffixes = []string{"_API_KEY", "_PASSWORD", "_SECRET", "_TOKEN"}

// shown is how the value of setting env may appear in help, errors and
// logs: nothing for a secret, URLs without their passwords otherwise.
func shown(env, value string) string {
	for _, suffix := range secretSuffixes {
		if strings.HasSuffix(env, suffix) {
			return ""
		}
	}
	return redact(value)
}

var (
	urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/:@\s]*:)[^@\s]*@`)
	dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
)

// redact masks the passwords of URLs (postgres://user:pw@host) and of
// key=value connection strings (password=pw) in s.
func redact(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}xxxxx@")
	return dsnPassword.ReplaceAllString(s, "${1}xxxxx")
}

// parse parses args and fills in derived defaults.
func (c *config) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if _, err := c.databaseOptions(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + c.Addr
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return nil
}

func (c *config) requireDatabase() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL (or --database-url) is required")
	}
	return nil
}

// directDatabaseURL is the unpooled URL for sessions of their own (LISTEN,
// migrations): ASSESSD_DATABASE_DIRECT_URL, or DATABASE_URL.
func (c *config) directDatabaseURL() string {
	if c.DatabaseDirectURL != "" {
		return c.DatabaseDirectURL
	}
	return c.DatabaseURL
}

func (c *config) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	return newLogger(w, level)
}

// databaseOptions are the options of the database pool: the direct URL
// and the timeouts, parsed.
func (c *config) databaseOptions() ([]store.Option, error) {
	opts := []store.Option{store.WithDirectURL(c.directDatabaseURL())}
	for _, t := range []struct {
		env, value string
		option     func(time.Duration) store.Option
	}{
		{"ASSESSD_DATABASE_ACQUIRE_TIMEOUT", c.DatabaseAcquireTimeout, store.WithAcquireTimeout},
		{"ASSESSD_DATABASE_STATEMENT_TIMEOUT", c.DatabaseStatementTimeout, store.WithStatementTimeout},
		{"ASSESSD_DATABASE_LOCK_TIMEOUT", c.DatabaseLockTimeout, store.WithLockTimeout},
	} {
		d, err := time.ParseDuration(t.value)
		if err != nil || d < time.Millisecond {
			return nil, fmt.Errorf("%s must be a duration of at least 1ms, e.g. 5s", t.env)
		}
		opts = append(opts, t.option(d))
	}
	return opts, nil
}

// webhookTargets is where webhook deliveries may go
// (ASSESSD_WEBHOOK_ALLOW_PRIVATE).
func (c *config) webhookTargets() (egress.Targets, error) {
	allow, err := strconv.ParseBool(c.WebhookAllowPrivate)
	if err != nil {
		return egress.Targets{}, errors.New("ASSESSD_WEBHOOK_ALLOW_PRIVATE must be true or false")
	}
	return egress.Targets{AllowPrivate: allow}, nil
}

// mediaMaxUploadBytes parses ASSESSD_MEDIA_MAX_UPLOAD_BYTES.
func (c *config) mediaMaxUploadBytes() (int64, error) {
	n, err := strconv.ParseInt(c.MediaMaxUploadBytes, 10, 64)
	if err != nil || n < 1 {
		return 0, errors.New("ASSESSD_MEDIA_MAX_UPLOAD_BYTES must be a positive number of bytes")
	}
	return n, nil
}

// workerMemory is the budget of ASSESSD_WORKER_MEMORY_BYTES, at least
// room for one answer's files.
func (c *config) workerMemory() (*membudget.Budget, error) {
	n, err := strconv.ParseInt(c.WorkerMemoryBytes, 10, 64)
	if err != nil || n < gradingactivities.AnswerFileBytes {
		return nil, fmt.Errorf("ASSESSD_WORKER_MEMORY_BYTES must be a number of bytes of at least %d", gradingactivities.AnswerFileBytes)
	}
	return membudget.New(n), nil
}

// mediaPrefixes splits ASSESSD_MEDIA_CDN and adds the base URL's /media/,
// where assessd serves the answer files uploaded to it.
func (c *config) mediaPrefixes() []string {
	out := []string{media.PrefixOf(c.BaseURL)}
	for _, p := range strings.Split(c.MediaCDN, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// aiProvider returns region's AI provider: the builtin grader, or the
// OpenAI-compatible endpoint configured for that region only, so EU work
// can reach nothing but the EU endpoint.
func (c *config) aiProvider(region string, reg prometheus.Registerer) (ai.Provider, error) {
	switch c.AIProvider {
	case "", "builtin":
		return ai.Instrument(ai.NewBuiltin(), "builtin", region, reg), nil
	case "openai":
		url, env := c.AIGlobalURL, "ASSESSD_AI_GLOBAL_URL"
		if region == "eu" {
			url, env = c.AIEUURL, "ASSESSD_AI_EU_URL"
		}
		if url == "" {
			return nil, fmt.Errorf("%s is required for the %s region with ASSESSD_AI_PROVIDER=openai", env, region)
		}
		p := ai.NewOpenAI(ai.OpenAIConfig{BaseURL: url, APIKey: c.AIAPIKey, Model: c.AIModel})
		return ai.Instrument(p, "openai", region, reg), nil
	}
	return nil, fmt.Errorf("ASSESSD_AI_PROVIDER must be builtin or openai, not %q", c.AIProvider)
}
