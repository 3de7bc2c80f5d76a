package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"
)

// namespaceRetention is how long a namespace that assessd registers keeps
// closed workflows' histories.
const namespaceRetention = 7 * 24 * time.Hour

// temporalOptions maps the TEMPORAL_* settings to client options: the
// frontend address and namespace, call compression, mTLS (client certificate and key) or
// server-authenticated TLS (CA only), and an API key, which turns TLS on
// by itself (Temporal Cloud).
func (c *config) temporalOptions(log *slog.Logger, metrics client.MetricsHandler) (client.Options, error) {
	opts := client.Options{
		HostPort:       c.TemporalAddress,
		Namespace:      c.TemporalNamespace,
		Logger:         sdklog.NewStructuredLogger(log.With("component", "temporal")),
		MetricsHandler: metrics,
	}
	switch c.TemporalGRPCCompression {
	case "gzip", "":
	case "none":
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	default:
		return opts, fmt.Errorf("TEMPORAL_GRPC_COMPRESSION must be gzip or none, not %q", c.TemporalGRPCCompression)
	}
	if c.TemporalAPIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.TemporalAPIKey)
	}
	if (c.TemporalTLSCert == "") != (c.TemporalTLSKey == "") {
		return opts, errors.New("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both for mTLS, or neither")
	}
	if c.TemporalTLSCert == "" && c.TemporalTLSCA == "" && c.TemporalTLSServerName == "" {
		return opts, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TemporalTLSServerName}
	if c.TemporalTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TemporalTLSCert, c.TemporalTLSKey)
		if err != nil {
			return opts, fmt.Errorf("TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.TemporalTLSCA != "" {
		pem, err := os.ReadFile(c.TemporalTLSCA)
		if err != nil {
			return opts, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return opts, fmt.Errorf("TEMPORAL_TLS_CA: %s holds no PEM certificate", c.TemporalTLSCA)
		}
	}
	opts.ConnectionOptions.TLS = cfg
	return opts, nil
}

// ensureNamespace checks that the client's namespace exists. With
// TEMPORAL_CREATE_NAMESPACE=true a missing namespace is registered (a
// self-hosted cluster; Temporal Cloud namespaces are made in its console)
// and awaited until the frontend serves it.
func (c *config) ensureNamespace(ctx context.Context, opts client.Options) error {
	create, err := strconv.ParseBool(c.TemporalCreateNamespace)
	if err != nil {
		return fmt.Errorf("TEMPORAL_CREATE_NAMESPACE must be true or false, not %q", c.TemporalCreateNamespace)
	}
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer nc.Close()
	_, err = nc.Describe(ctx, opts.Namespace)
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &notFound):
		return fmt.Errorf("temporal at %s (TEMPORAL_ADDRESS): checking namespace %q: %w", opts.HostPort, opts.Namespace, err)
	case !create:
		return fmt.Errorf("temporal namespace %q does not exist: create it (temporal operator namespace create) or set TEMPORAL_CREATE_NAMESPACE=true", opts.Namespace)
	}
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        opts.Namespace,
		Description:                      "assessd grading and generation",
		WorkflowExecutionRetentionPeriod: durationpb.New(namespaceRetention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("temporal: registering namespace %q: %w", opts.Namespace, err)
	}
	// Frontends learn of a new namespace through their cache refresh.
	for {
		if _, err = nc.Describe(ctx, opts.Namespace); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal: namespace %q registered but not served yet: %w", opts.Namespace, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
