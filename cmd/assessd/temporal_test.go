package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/testkit/devenvtest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// pki is a test CA with a server certificate for temporal.test and a
// client certificate, written as PEM files.
type pki struct {
	dir        string
	pool       *x509.CertPool
	serverCert tls.Certificate
}

func newPKI(t *testing.T) pki {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := pki{dir: dir, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(dir, name+"-key.pem"), "EC PRIVATE KEY", keyDER)
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	p.serverCert = issue("temporal.test", 2, x509.ExtKeyUsageServerAuth)
	issue("assessd", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTemporalOptions(t *testing.T) {
	p := newPKI(t)
	file := func(name string) string { return filepath.Join(p.dir, name) }

	plain, err := (&config{TemporalAddress: "t:7233", TemporalNamespace: "ns"}).temporalOptions(discard, nil)
	if err != nil || plain.ConnectionOptions.TLS != nil || plain.Credentials != nil || plain.HostPort != "t:7233" || plain.Namespace != "ns" {
		t.Fatalf("plain options = %+v, %v", plain, err)
	}
	mtls, err := (&config{TemporalTLSCert: file("assessd.pem"), TemporalTLSKey: file("assessd-key.pem"), TemporalTLSCA: file("ca.pem"),
		TemporalTLSServerName: "temporal.test"}).temporalOptions(discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc := mtls.ConnectionOptions.TLS; tc == nil || len(tc.Certificates) != 1 || tc.RootCAs == nil || tc.ServerName != "temporal.test" {
		t.Fatalf("mTLS config = %+v", mtls.ConnectionOptions.TLS)
	}
	// An API key alone: the SDK turns TLS on with the system roots.
	cloud, err := (&config{TemporalAPIKey: "secret-key"}).temporalOptions(discard, nil)
	if err != nil || cloud.Credentials == nil || cloud.ConnectionOptions.TLS != nil {
		t.Fatalf("API key options = %+v, %v", cloud, err)
	}
	// Calls are gzipped unless the server is in the same cluster.
	if plain.ConnectionOptions.GrpcCompression != nil {
		t.Errorf("default compression = %T, want the SDK's gzip", plain.ConnectionOptions.GrpcCompression)
	}
	inCluster, err := (&config{TemporalGRPCCompression: "none"}).temporalOptions(discard, nil)
	if _, none := inCluster.ConnectionOptions.GrpcCompression.(*client.GrpcCompressionNone); err != nil || !none {
		t.Errorf("TEMPORAL_GRPC_COMPRESSION=none: compression %T, %v", inCluster.ConnectionOptions.GrpcCompression, err)
	}
	for _, c := range []struct {
		cfg  config
		want string
	}{
		{config{TemporalGRPCCompression: "zstd"}, "TEMPORAL_GRPC_COMPRESSION"},
		{config{TemporalTLSCert: file("assessd.pem")}, "TEMPORAL_TLS_KEY"},
		{config{TemporalTLSCert: file("assessd.pem"), TemporalTLSKey: file("ca.pem")}, "TEMPORAL_TLS_CERT"},
		{config{TemporalTLSCA: file("nope.pem")}, "TEMPORAL_TLS_CA"},
		{config{TemporalTLSCA: file("assessd-key.pem")}, "no PEM certificate"},
	} {
		if _, err := c.cfg.temporalOptions(discard, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want mention of %s", c.cfg, err, c.want)
		}
	}
}

// tlsProxy terminates mTLS (client certificates from p's CA required) in
// front of the plaintext dev server at target, like a secured cluster's
// frontend.
func tlsProxy(t *testing.T, p pki, target string) string {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{p.serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return ln.Addr().String()
}

// A worker reaches a secured cluster over mTLS, and is refused without its
// client certificate; the namespace is verified, and registered only when
// allowed.
func TestTemporalOverMTLSAndNamespace(t *testing.T) {
	server := devenvtest.Server(t)
	p := newPKI(t)
	cfg := config{
		TemporalAddress: tlsProxy(t, p, server.Address), TemporalNamespace: "default", TemporalCreateNamespace: "false",
		TemporalTLSCert: filepath.Join(p.dir, "assessd.pem"), TemporalTLSKey: filepath.Join(p.dir, "assessd-key.pem"),
		TemporalTLSCA: filepath.Join(p.dir, "ca.pem"), TemporalTLSServerName: "temporal.test",
	}
	c, err := dialTemporal(cfg, discard, nil)
	if err != nil {
		t.Fatalf("dial over mTLS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		t.Fatalf("health over mTLS: %v", err)
	}
	c.Close()

	noCert := cfg
	noCert.TemporalTLSCert, noCert.TemporalTLSKey = "", ""
	if c, err := dialTemporal(noCert, discard, nil); err == nil {
		c.Close()
		t.Fatal("dialled a cluster requiring client certificates without one")
	}

	missing := cfg
	missing.TemporalNamespace = "assessd-smoke"
	if _, err := dialTemporal(missing, discard, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing namespace: err = %v", err)
	}
	missing.TemporalCreateNamespace = "true"
	c, err = dialTemporal(missing, discard, nil)
	if err != nil {
		t.Fatalf("namespace creation: %v", err)
	}
	c.Close()
	missing.TemporalCreateNamespace = "false" // now it exists
	c, err = dialTemporal(missing, discard, nil)
	if err != nil {
		t.Fatalf("created namespace not found: %v", err)
	}
	c.Close()
}
