// Command benchlti measures LTI launch throughput: concurrent clients each
// run a learner's whole launch against assessd (the login initiation, its
// redirect read for the state and nonce, an id_token signed by the
// platform's key, the launch's form post, verified against the platform's
// JWKS and matched to a returning user and their course's class). The
// baseline is the same two requests against a bare handler that keeps the
// state in memory and verifies the same RS256 id_token with the same
// library (go-jose). A third row, the ceiling, is that bare handler with
// the Redis and PostgreSQL round trips of a launch made by their libraries
// directly (layers.go). It prints launches per second of each and the
// ratios to the baseline.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/tenancy"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchlti:", err)
		os.Exit(1)
	}
}

const (
	clientID   = "bench-client"
	deployment = "bench-deployment"
	kid        = "bench-key"
)

// platform is the launching LMS: its key, published at its JWKS URL.
type platform struct {
	key    *rsa.PrivateKey
	signer jose.Signer
	url    string
}

func (p *platform) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
}

// idToken signs a learner's resource-link launch of sub for a tool at
// toolURL whose login asked nonce.
func (p *platform) idToken(toolURL, sub, nonce string) (string, error) {
	now := time.Now()
	const claim = "https://purl.imsglobal.org/spec/lti/claim/"
	return jwt.Signed(p.signer).Claims(map[string]any{
		"iss": p.url, "aud": clientID, "sub": sub, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": nonce,
		"name": "Learner " + sub, claim + "message_type": lti.MessageResourceLink, claim + "version": lti.Version,
		claim + "deployment_id": deployment, claim + "target_link_uri": toolURL + "/lti/launch",
		claim + "roles":         []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"},
		claim + "resource_link": map[string]string{"id": "link-1"},
		claim + "context":       map[string]string{"id": "course-1", "title": "Bench course"},
	}).Serialize()
}

func run(ctx context.Context) (err error) {
	duration := flag.Duration("d", 5*time.Second, "how long each side is measured")
	clients := flag.Int("c", 8, "concurrent launching clients")
	users := flag.Int("u", 200, "distinct learners, each launched once before the measurement")
	profile := flag.String("cpuprofile", "", "write a CPU profile of assessd's measurement to this file")
	flag.Parse()
	env, err := benchenv.Start(ctx, "assessd_benchlti")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()

	p := &platform{}
	if p.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return err
	}
	if p.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: p.key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT")); err != nil {
		return err
	}
	lms := httptest.NewServer(http.HandlerFunc(p.jwks))
	defer lms.Close()
	p.url = lms.URL

	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	// The platform is on loopback, and every client on one address.
	a, err := app.New(ctx, env.DB, app.Config{BaseURL: srv.URL, Logger: env.Logger, Webhooks: egress.Targets{AllowPrivate: true},
		Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), RequestsPerMinute: benchenv.Unthrottled, LTIPerMinute: 1_000_000_000})
	if err != nil {
		return err
	}
	handler = a.Handler
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanEnterprise})
	if err != nil {
		return err
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	if _, err := a.LTI.CreatePlatform(sys, lti.NewPlatform{Name: "Bench LMS", Issuer: p.url, ClientID: clientID, DeploymentIDs: []string{deployment},
		AuthLoginURL: p.url + "/auth", AccessTokenURL: p.url + "/token", JWKSURL: p.url + "/jwks"}); err != nil {
		return err
	}
	bare := httptest.NewServer(newBareTool(&p.key.PublicKey, p.url, nil))
	defer bare.Close()
	l, err := newLayers(ctx, env.URL)
	if err != nil {
		return err
	}
	defer l.close()
	ceiling := httptest.NewServer(newBareTool(&p.key.PublicKey, p.url, l))
	defer ceiling.Close()

	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
	launch := func(tool, sub string) error { return launchOnce(c, p, tool, sub) }
	// Every learner's first launch creates them: the measurement is of
	// returning learners.
	for i := range *users {
		if err := launch(srv.URL, fmt.Sprintf("learner-%d", i)); err != nil {
			return fmt.Errorf("first launch: %w", err)
		}
	}
	if err := env.Analyze(ctx); err != nil {
		return err
	}
	baseRate, err := measure(*duration, *clients, *users, func(sub string) error { return launch(bare.URL, sub) })
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	ceilingRate, err := measure(*duration, *clients, *users, func(sub string) error { return launch(ceiling.URL, sub) })
	if err != nil {
		return fmt.Errorf("ceiling: %w", err)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	rate, err := measure(*duration, *clients, *users, func(sub string) error { return launch(srv.URL, sub) })
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	fmt.Printf("LTI launches (login + launch) of %d returning learners by %d concurrent clients, %s each, all on loopback\n", *users, *clients, *duration)
	fmt.Printf("baseline: the same requests against a bare handler verifying the same RS256 id_token with go-jose, state in memory\n\n")
	fmt.Printf("%-36s %10s\n", "", "per second")
	fmt.Printf("%-36s %10.1f\n", "bare verifying handler (baseline)", baseRate)
	fmt.Printf("%-36s %10.1f\n", "the same with the storage round trips", ceilingRate)
	fmt.Printf("%-36s %10.1f\n", "assessd /lti/login + /lti/launch", rate)
	fmt.Printf("\nratio assessd/baseline: %.2f (ceiling, the bare layers beneath: %.2f)\n", rate/baseRate, ceilingRate/baseRate)
	return nil
}

// launchOnce runs one launch of sub against the tool at tool: the login,
// the id_token for its nonce, the form post with its state.
func launchOnce(c *http.Client, p *platform, tool, sub string) error {
	q := url.Values{"iss": {p.url}, "login_hint": {sub}, "target_link_uri": {tool + "/lti/launch"}, "client_id": {clientID}}
	resp, err := c.Get(tool + "/lti/login?" + q.Encode()) //nolint:noctx // a benchmark's request
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode != http.StatusFound {
		return fmt.Errorf("login answered %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return err
	}
	token, err := p.idToken(tool, sub, loc.Query().Get("nonce"))
	if err != nil {
		return err
	}
	resp, err = c.PostForm(tool+"/lti/launch", url.Values{"id_token": {token}, "state": {loc.Query().Get("state")}}) //nolint:noctx // a benchmark's request
	if err != nil {
		return err
	}
	body := drain(resp)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("launch answered %d: %.300s", resp.StatusCode, body)
	}
	return nil
}

func drain(resp *http.Response) string {
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// measure runs launch from clients goroutines for d, cycling over users
// learners, and returns the launches per second.
func measure(d time.Duration, clients, users int, launch func(sub string) error) (float64, error) {
	var done atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for g := range clients {
		wg.Go(func() {
			for i := g; time.Now().Before(stop); i += clients {
				if err := launch(fmt.Sprintf("learner-%d", i%users)); err != nil {
					once.Do(func() { first = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), first
}

// bareTool is the baseline: a login handler that keeps state and nonce,
// and a launch handler that takes the state once and verifies the
// id_token's RS256 signature, issuer, audience, expiry and nonce. With
// layers set it is the ceiling instead (layers.go): the same, plus the
// Redis and PostgreSQL round trips a returning learner's launch makes.
type bareTool struct {
	key    *rsa.PublicKey
	issuer string
	layers *layers // nil: the state in memory, nothing stored
	mu     sync.Mutex
	states map[string]string // state -> nonce
}

func newBareTool(key *rsa.PublicKey, issuer string, l *layers) http.Handler {
	t := &bareTool{key: key, issuer: issuer, layers: l, states: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /lti/login", t.login)
	mux.HandleFunc("POST /lti/launch", t.launch)
	return mux
}

func (t *bareTool) login(w http.ResponseWriter, r *http.Request) {
	state, nonce := rand.Text(), rand.Text()
	if t.layers != nil {
		if err := t.layers.login(r.Context(), r.RemoteAddr, t.issuer, state, nonce); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	} else {
		t.mu.Lock()
		t.states[state] = nonce
		t.mu.Unlock()
	}
	q := url.Values{"state": {state}, "nonce": {nonce}, "login_hint": {r.URL.Query().Get("login_hint")}}
	http.Redirect(w, r, t.issuer+"/auth?"+q.Encode(), http.StatusFound)
}

func (t *bareTool) launch(w http.ResponseWriter, r *http.Request) {
	state := r.PostFormValue("state")
	var nonce string
	var ok bool
	if t.layers != nil {
		var err error
		if nonce, ok, err = t.layers.take(r.Context(), r.RemoteAddr, state); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	} else {
		t.mu.Lock()
		nonce, ok = t.states[state]
		delete(t.states, state)
		t.mu.Unlock()
	}
	tok, err := jwt.ParseSigned(r.PostFormValue("id_token"), []jose.SignatureAlgorithm{jose.RS256})
	var c struct {
		jwt.Claims
		Nonce string `json:"nonce"`
	}
	if !ok || err != nil || tok.Claims(t.key, &c) != nil || c.Nonce != nonce ||
		c.ValidateWithLeeway(jwt.Expected{Issuer: t.issuer, AnyAudience: jwt.Audience{clientID}, Time: time.Now()}, time.Minute) != nil {
		http.Error(w, "refused", http.StatusUnauthorized)
		return
	}
	if t.layers != nil {
		if err := t.layers.record(r.Context(), t.issuer, c.Subject); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, "<!doctype html><title>Launched</title><p>"+strings.ReplaceAll(c.Subject, "<", "")+"</p>")
}
