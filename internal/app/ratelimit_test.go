package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func forwardedFor(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

// guessAt is an API key with key's id and a wrong secret.
func guessAt(key string) string { return key[:strings.LastIndex(key, "_")+1] + "wrong" }

// metricLine reports whether the server's /metrics has a sample line
// starting with prefix.
func metricLine(e *env, prefix string) string {
	for _, line := range strings.Split(string(e.Do("GET", "/metrics", "", nil).Raw), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// TestTenantsBehindOneProxy runs assessd behind a trusted load balancer
// (the loopback peer): clients are told apart by X-Forwarded-For, and an
// attacker guessing at one tenant's key locks out neither that tenant's
// user elsewhere nor another tenant sharing the attacker's address.
func TestTenantsBehindOneProxy(t *testing.T) {
	t.Parallel()
	trusted, err := clientaddr.Parse("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.TrustedProxies = trusted })
	a, b := e.NewTenant("US", "free"), e.NewTenant("DE", "pro")
	attacker := forwardedFor("198.51.100.66")
	apptest.Throttled(t, 20, 10, func() response { return e.DoWith("GET", "/me", guessAt(a.Keys[tenancy.RoleOwner]), nil, attacker) })
	e.DoWith("GET", "/me", a.Keys[tenancy.RoleOwner], nil, attacker).Must(t, http.StatusTooManyRequests)
	e.DoWith("GET", "/me", a.Keys[tenancy.RoleOwner], nil, forwardedFor("203.0.113.5")).Must(t, http.StatusOK)
	e.DoWith("GET", "/me", b.Keys[tenancy.RoleOwner], nil, attacker).Must(t, http.StatusOK)
	e.Do("GET", "/me", a.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusOK)
	if line := metricLine(e, `assessd_rate_limited_requests_total{limit="api_auth_failures",org="_none"}`); line == "" {
		t.Error("throttled authentications not counted")
	}
}

// TestUntrustedForwardedForIsIgnored: without trusted proxies a client
// cannot escape its limit by inventing X-Forwarded-For values.
func TestUntrustedForwardedForIsIgnored(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "free")
	i := 0
	apptest.Throttled(t, 20, 10, func() response {
		i++
		return e.DoWith("GET", "/me", guessAt(tn.Keys[tenancy.RoleOwner]), nil, forwardedFor(fmt.Sprintf("198.51.100.%d", i)))
	})
}

var rateLimitField = regexp.MustCompile(`^"(\w+)";r=(\d+);t=(\d+)$`)

// TestRequestQuotas holds each organization to its plan's quota, shown in
// the RateLimit headers, and answers 429 with Retry-After beyond it.
func TestRequestQuotas(t *testing.T) {
	t.Parallel()
	e := apptest.NewWithConfig(t, func(c *app.Config) {
		c.RequestsPerMinute = func(plan string) int {
			if plan == tenancy.PlanFree {
				return 3
			}
			return 100
		}
	})
	free, pro := e.NewTenant("US", "free"), e.NewTenant("US", "pro")
	for i := range 3 {
		r := e.Do("GET", "/me", free.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
		if got := r.Header.Get("RateLimit-Policy"); got != `"free";q=3;w=60` {
			t.Fatalf("RateLimit-Policy = %q", got)
		}
		m := rateLimitField.FindStringSubmatch(r.Header.Get("RateLimit"))
		if m == nil || m[1] != "free" || m[2] != strconv.Itoa(2-i) {
			t.Fatalf("request %d: RateLimit = %q", i, r.Header.Get("RateLimit"))
		}
	}
	// The quota is the organization's: another key of it shares it.
	r := e.Do("GET", "/users", free.Keys[tenancy.RoleAdmin], nil).Must(t, http.StatusTooManyRequests)
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 || r.Reason() != "RATE_LIMITED" || r.Body["code"] != float64(8) {
		t.Fatalf("over quota: Retry-After %q, body %s", r.Header.Get("Retry-After"), r.Raw)
	}
	if m := rateLimitField.FindStringSubmatch(r.Header.Get("RateLimit")); m == nil || m[2] != "0" {
		t.Fatalf("over quota: RateLimit = %q", r.Header.Get("RateLimit"))
	}
	r = e.Do("GET", "/me", pro.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	if got := r.Header.Get("RateLimit-Policy"); got != `"pro";q=100;w=60` {
		t.Fatalf("pro RateLimit-Policy = %q", got)
	}
	if line := metricLine(e, `assessd_rate_limited_requests_total{limit="org_quota",org="`+free.Org.ID+`"}`); !strings.HasSuffix(line, " 1") {
		t.Fatalf("throttled requests of %s: %q", free.Org.ID, line)
	}
	// Requests without a caller carry no quota headers.
	if h := e.Do("GET", "/healthz", "", nil).Header.Get("RateLimit"); h != "" {
		t.Errorf("/healthz RateLimit = %q", h)
	}
}

// Students' own credentials count against a quota of each student's, not
// the organization's (decision 0192): on exam day thousands of students
// saving every few seconds leave the school's quota to its staff and
// integrations, and a student whose client retries in a loop throttles
// only themself.
func TestStudentsHaveQuotasOfTheirOwn(t *testing.T) {
	t.Parallel()
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.RequestsPerMinute = func(string) int { return 5 } })
	tn := e.NewTenant("US", "enterprise")
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	other, err := e.App.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "other@school.test", Name: "Other", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := e.App.Tenancy.CreateAPIKey(ctx, other.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	student := tn.Keys[tenancy.RoleStudent]
	if r := e.Do("GET", "/me", student, nil).Must(t, http.StatusOK); r.Header.Get("RateLimit-Policy") != fmt.Sprintf(`"student";q=%d;w=60`, tenancy.StudentRequestsPerMinute) {
		t.Fatalf("a student's RateLimit-Policy = %q", r.Header.Get("RateLimit-Policy"))
	}
	r := apptest.Throttled(t, tenancy.StudentRequestsPerMinute-1, tenancy.StudentRequestsPerMinute, func() response {
		return e.Do("GET", "/me", student, nil)
	})
	if msg, _ := r.Body["message"].(string); r.Reason() != "RATE_LIMITED" || !strings.HasPrefix(msg, "your request quota") {
		t.Fatalf("over a student's quota: %s", r.Raw)
	}
	// Another student, and the organization's quota, are untouched.
	e.Do("GET", "/me", otherKey, nil).Must(t, http.StatusOK)
	for range 5 {
		e.Do("GET", "/me", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusOK)
	}
	e.Do("GET", "/me", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusTooManyRequests)
	if line := metricLine(e, `assessd_rate_limited_requests_total{limit="user_quota",org="`+tn.Org.ID+`"}`); !strings.HasSuffix(line, " 1") {
		t.Errorf("throttled student requests: %q", line)
	}
}

// TestQuotaOverrideReachesEveryInstance: the operator's quota override,
// written as assessd admin org update writes it, is what two instances
// sharing the database enforce once their cached policy of the
// organization expires (a second here, a minute in production); a plan
// change keeps the override, and removing it gives the plan's quota back.
func TestQuotaOverrideReachesEveryInstance(t *testing.T) {
	t.Parallel()
	config := func(c *app.Config) {
		c.QuotaPolicyTTL = time.Second
		c.RequestsPerMinute = func(plan string) int {
			if plan == tenancy.PlanFree {
				return 2
			}
			return 100
		}
	}
	a := apptest.NewWithConfig(t, config)
	b := apptest.NewOn(t, a.DB, config)
	tn := a.NewTenant("US", "free")
	key := tn.Keys[tenancy.RoleOwner]
	for _, e := range []*env{a, b} {
		for range 2 {
			e.Do("GET", "/me", key, nil).Must(t, http.StatusOK)
		}
		e.Do("GET", "/me", key, nil).Must(t, http.StatusTooManyRequests)
	}

	operator := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	policyBecomes := func(p tenancy.PlanPatch, want string) {
		t.Helper()
		if _, err := a.App.Tenancy.SetPlan(operator, p); err != nil {
			t.Fatal(err)
		}
		for _, e := range []*env{a, b} {
			eventually.Succeeds(t, 10*time.Second, func() error {
				r := e.Do("GET", "/me", key, nil)
				if got := r.Header.Get("RateLimit-Policy"); r.Status != http.StatusOK || got != want {
					return fmt.Errorf("%d with RateLimit-Policy %q, want 200 with %q", r.Status, got, want)
				}
				return nil
			})
		}
	}
	thousand, none := 1000, 0
	policyBecomes(tenancy.PlanPatch{RequestsPerMinute: &thousand}, `"free";q=1000;w=60`)
	pro := tenancy.PlanPro
	policyBecomes(tenancy.PlanPatch{Plan: &pro}, `"pro";q=1000;w=60`)
	policyBecomes(tenancy.PlanPatch{RequestsPerMinute: &none}, `"pro";q=100;w=60`)
}

// TestRedisDownLimitsPerProcess points the limits at a closed port: the
// API keeps serving, limits hold per process, and the fallback is counted.
func TestRedisDownLimitsPerProcess(t *testing.T) {
	t.Parallel()
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { down.Close() })
	e := apptest.NewWithConfig(t, func(c *app.Config) {
		c.Redis = down
		c.RequestsPerMinute = func(string) int { return 3 }
	})
	tn := e.NewTenant("US", "free")
	for range 3 {
		r := e.Do("GET", "/me", tn.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
		if r.Header.Get("RateLimit") == "" {
			t.Fatal("no RateLimit header while Redis is down")
		}
	}
	e.Do("GET", "/me", tn.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusTooManyRequests)
	apptest.Throttled(t, 20, 10, func() response { return e.Do("GET", "/me", "ak_guess", nil) })
	line := metricLine(e, "assessd_rate_limit_local_decisions_total ")
	if n, _ := strconv.Atoi(strings.Fields(line + " 0")[1]); n < 29 {
		t.Fatalf("local decisions: %q", line)
	}
}

// TestRedisStateIsExported: /metrics says whether Redis answers, for the
// AssessdRedisDown alert; readiness leaves Redis out, so nothing else would.
func TestRedisStateIsExported(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(&redis.Options{MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.Redis = rdb })
	for _, step := range []struct {
		change func()
		want   string
	}{
		{func() {}, "assessd_redis_up 1"},
		{srv.Stop, "assessd_redis_up 0"},
		{srv.Restart, "assessd_redis_up 1"},
	} {
		step.change()
		if got := metricLine(e, "assessd_redis_up "); got != step.want {
			t.Fatalf("%q, want %q", got, step.want)
		}
	}
}

// TestDatabaseDownIsUnavailableForEveryCallerKind: when credentials
// cannot be checked the answer is 503, never 401, for API keys, OAuth
// access tokens and service-account JWTs, and for the login form.
func TestDatabaseDownIsUnavailableForEveryCallerKind(t *testing.T) {
	t.Parallel()
	now := time.Now()
	e := apptest.NewWithClock(t, func() time.Time { return now })
	tn := e.NewTenant("US", "pro")
	oauth := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	oauth.Conf.Scopes = []string{"profile", "users:read", "offline_access"}
	tok := e.Token(oauth)
	callers := map[string]string{
		"api key":      tn.Keys[tenancy.RoleTeacher], // never used, so not cached
		"access token": tok.AccessToken,
		"jwt":          e.ServiceAccountToken(tn, tenancy.RoleTeacher, "users:read"),
	}
	b := e.NewBrowser()
	login := b.Get(e.Srv.URL + "/login")
	verifier := oauth2.GenerateVerifier()
	code := e.CodeFor(oauth, oauth2.S256ChallengeOption(verifier))
	sa := e.NewServiceAccount(tn, tenancy.RoleTeacher)
	key := e.AddKey(sa)
	signedIn := e.NewBrowser()
	e.SignIn(signedIn, oauth)
	teacher := tn.Keys[tenancy.RoleOwner]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Outage", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	studentPage := e.Srv.URL + "/embed/" + e.EmbedSession(teacher, map[string]any{"flow": "student-exam",
		"actor": tn.Users[tenancy.RoleStudent].ID, "examId": exam})

	e.DB.Close()
	check := func(kind, token string) {
		t.Helper()
		r := e.Do("GET", "/users", token, nil)
		if r.Status != http.StatusServiceUnavailable || r.Reason() != "DATABASE_UNAVAILABLE" || r.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s with the database down: %d %s (WWW-Authenticate %q)", kind, r.Status, r.Raw, r.Header.Get("WWW-Authenticate"))
		}
	}
	for kind, token := range callers {
		check(kind, token)
	}
	// Once the cached signing keys are due for a reload, reading them fails too.
	now = now.Add(2 * time.Minute)
	check("jwt after the key cache expired", callers["jwt"])

	// The token endpoint cannot read the credentials, which may well be
	// good: 503 server_error, for the client to retry, never invalid_client
	// or invalid_grant, which would make it drop them.
	ctx := context.Background()
	_, err := oauth.Conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	checkUnavailable(t, "code exchange", err)
	_, err = oauth.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	checkUnavailable(t, "refresh", err)
	if status, _, code := e.ExchangeAssertion(sa, key, "users:read"); status != http.StatusServiceUnavailable || code != "server_error" {
		t.Errorf("jwt-bearer grant with the database down: %d %q, want 503 server_error", status, code)
	}
	res, err := http.PostForm(e.Srv.URL+"/oauth/revoke", url.Values{
		"token": {tok.RefreshToken}, "client_id": {oauth.Conf.ClientID}, "client_secret": {oauth.Conf.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("revocation with the database down: %d, want 503 (nothing was revoked)", res.StatusCode)
	}
	if status, info, _ := e.Userinfo(tok.AccessToken); status != http.StatusServiceUnavailable || info["error"] != "server_error" {
		t.Errorf("userinfo with the database down: %d %v, want 503 server_error", status, info)
	}

	p := b.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Field("csrf")}, "email": {oauth.Email}, "password": {oauth.Password}})
	if p.Status != http.StatusServiceUnavailable {
		t.Errorf("login with the database down: %d", p.Status)
	}
	// Pages say the service is unavailable, never that a session expired.
	if p := signedIn.Get(e.Srv.URL + "/account"); p.Status != http.StatusServiceUnavailable || !strings.Contains(p.Body, "Try again later") {
		t.Errorf("account page with the database down: %d\n%s", p.Status, p.Body)
	}
	if p := e.NewBrowser().Get(studentPage); p.Status != http.StatusServiceUnavailable || !strings.Contains(p.Body, "retry") {
		t.Errorf("embedded exam with the database down: %d\n%s", p.Status, p.Body)
	}
}

// TestConsentsThatCannotGoOn: the stale-link page tells the user to start
// again from the app. That cures an authorization request that is unknown
// or already answered, but not one the server failed to read: that
// failure is the server's, "Try again later", 500.
func TestConsentsThatCannotGoOn(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewURL(t)
	e := apptest.NewAt(t, dbURL)
	a := e.NewOAuthApp(e.NewTenant("US", "pro"), tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"profile"}
	b := e.NewBrowser()
	login := b.Get(a.Conf.AuthCodeURL("state-123"))
	consent := b.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Field("csrf")}, "authRequestID": {login.Field("authRequestID")}, "email": {a.Email}, "password": {a.Password}})
	answer := func(id, decision string) page {
		return b.Post(e.Srv.URL+"/consent", url.Values{"csrf": {consent.Field("csrf")}, "authRequestID": {id}, "decision": {decision}})
	}
	if p := answer(consent.Field("authRequestID"), "approve"); p.Status != http.StatusSeeOther && p.Status != http.StatusFound {
		t.Fatalf("approval: %d\n%s", p.Status, p.Body)
	}
	for name, p := range map[string]page{
		"unknown request":           b.Get(e.Srv.URL + "/login?authRequestID=" + strings.Repeat("0", 32)),
		"denied after its approval": answer(consent.Field("authRequestID"), "deny"),
	} {
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "This sign-in link is no longer valid") {
			t.Errorf("%s: %d, want the stale link\n%s", name, p.Status, p.Body)
		}
	}

	pending := b.Get(a.Conf.AuthCodeURL("state-456"))
	owner, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(context.Background())
	if _, err := owner.Exec(context.Background(), `ALTER FUNCTION oauth_client_for_auth(text) RENAME TO oauth_client_for_auth_gone`); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]page{
		"consent page": b.Get(e.Srv.URL + "/login?authRequestID=" + url.QueryEscape(pending.Field("authRequestID"))),
		"approval":     answer(pending.Field("authRequestID"), "approve"),
	} {
		if p.Status != http.StatusInternalServerError || !strings.Contains(p.Body, "Authorization is unavailable right now.") {
			t.Errorf("%s with the client unreadable: %d\n%s", name, p.Status, p.Body)
		}
	}
}

// checkUnavailable fails t unless err is the token endpoint's 503
// server_error.
func checkUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusServiceUnavailable || re.ErrorCode != "server_error" {
		t.Errorf("%s with the database down: %v, want 503 server_error", what, err)
	}
}

// TestUnreadTokensAre503: with the client's credentials read but the
// token's lookup failing, revocation and introspection answer 503 for the
// client to retry, and the token still works once the database answers. A
// 200 would tell the client the token was revoked, or is inactive.
func TestUnreadTokensAre503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.NewURL(t)
	e := apptest.NewAt(t, dbURL)
	tn := e.NewTenant("US", "pro")
	oauth := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	oauth.Conf.Scopes = []string{"profile", "users:read", "offline_access"}
	tok := e.Token(oauth)
	owner, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(ctx) })
	grant := func(sql string) {
		t.Helper()
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	grant(`REVOKE EXECUTE ON FUNCTION oauth_token_for_auth(bytea) FROM ` + store.AppRole)
	for _, hint := range []string{"", "refresh_token", "access_token"} {
		for _, token := range []string{tok.RefreshToken, tok.AccessToken} {
			res, err := http.PostForm(e.Srv.URL+"/oauth/revoke", url.Values{"token": {token}, "token_type_hint": {hint},
				"client_id": {oauth.Conf.ClientID}, "client_secret": {oauth.Conf.ClientSecret}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "server_error") {
				t.Errorf("revocation (hint %q) with the token unreadable: %d %s, want 503 server_error", hint, res.StatusCode, body)
			}
		}
	}
	introspect := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/oauth/introspect", strings.NewReader(url.Values{"token": {tok.AccessToken}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(oauth.Conf.ClientID, oauth.Conf.ClientSecret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if status, body := introspect(); status != http.StatusServiceUnavailable || !strings.Contains(body, "server_error") {
		t.Errorf("introspection with the token unreadable: %d %s, want 503 server_error", status, body)
	}
	grant(`GRANT EXECUTE ON FUNCTION oauth_token_for_auth(bytea) TO ` + store.AppRole)
	if r := e.Do("GET", "/users", tok.AccessToken, nil); r.Status != http.StatusOK {
		t.Fatalf("the token after the failed revocations: %d %s", r.Status, r.Raw)
	}
	if status, body := introspect(); status != http.StatusOK || !strings.Contains(body, `"active":true`) {
		t.Fatalf("introspection once the token reads: %d %s", status, body)
	}
}
