package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// config is the process configuration: environment variables, overridden
// by flags of the same name in kebab-case (API.md).
type config struct {
	Addr        string
	BaseURL     string
	DatabaseURL string
	LogLevel    string
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
		{"ASSESSD_LOG_LEVEL", "debug, info, warn or error", &c.LogLevel, "info"},
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
		fs.StringVar(s.target, strings.ReplaceAll(strings.ToLower(s.env), "_", "-"), def, s.help+" ($"+s.env+")")
	}
	return fs
}

// parse parses args and fills in derived defaults.
func (c *config) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
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

func (c *config) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	return newLogger(w, level)
}
