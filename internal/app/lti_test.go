package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/ltiplatform"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// ltiEnv is assessd with one organization that registered the test
// platform, which runs on loopback: the egress rules allow private
// addresses (ASSESSD_WEBHOOK_ALLOW_PRIVATE), as in development.
type ltiEnv struct {
	*env
	tn         tenant
	platform   *ltiplatform.Platform
	platformID string
	// client follows no redirect, as the launch's steps are checked one by
	// one.
	client *http.Client
}

func newLTIEnv(t *testing.T) *ltiEnv {
	t.Helper()
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.Webhooks = egress.Targets{AllowPrivate: true} })
	tn := e.NewTenant("US", "pro")
	p := ltiplatform.New(t, e.Srv.URL)
	l := &ltiEnv{env: e, tn: tn, platform: p,
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	l.platformID = apptest.Str(e.Do("POST", "/lti/platforms", tn.Keys[tenancy.RoleAdmin], platformBody(p)).Must(t, 200).Body, "id")
	return l
}

func platformBody(p *ltiplatform.Platform) map[string]any {
	return map[string]any{"name": "Test LMS", "issuer": p.Issuer, "clientId": p.ClientID, "deploymentIds": []string{p.DeploymentID},
		"authLoginUrl": p.AuthLoginURL(), "accessTokenUrl": p.TokenURL(), "jwksUrl": p.JWKSURL()}
}

// lmsCourse is the context of the tests' launches.
var lmsCourse = &ltiplatform.Context{ID: "course-7b", Label: "MATH-7B", Title: "7B Mathematics"}

func learner(sub string) *ltiplatform.Launch {
	return &ltiplatform.Launch{Subject: sub, Name: "Lena Learner", Email: sub + "@students.example", Roles: []string{ltiplatform.RoleLearner},
		Context: lmsCourse}
}

func instructor(sub string) *ltiplatform.Launch {
	return &ltiplatform.Launch{Subject: sub, Name: "Ines Instructor", Roles: []string{ltiplatform.RoleInstructor}, Context: lmsCourse}
}

// TestLTIPlatformRegistration registers, reads, changes and removes a
// platform over the API: owners and admins only, the tool's configuration
// in every answer, issuer and client id unique across organizations, URLs
// held to https and the egress rules, other organizations' ids a 404, and
// each change audited.
func TestLTIPlatformRegistration(t *testing.T) {
	t.Parallel()
	e := apptest.New(t) // the egress rules as in production: no private addresses
	tn := e.NewTenant("FR", "pro")
	other := e.NewTenant("DE", "pro")
	admin := tn.Keys[tenancy.RoleAdmin]
	body := map[string]any{"name": " Canvas ", "issuer": "https://canvas.instructure.com", "clientId": "10000000000042",
		"deploymentIds": []string{"87:abc"}, "authLoginUrl": "https://sso.canvaslms.com/api/lti/authorize_redirect",
		"accessTokenUrl": "https://93.184.215.14/login/oauth2/token", "jwksUrl": "https://93.184.215.14/api/lti/security/jwks"}
	created := e.Do("POST", "/lti/platforms", admin, body).Must(t, 200).Body
	id := apptest.Str(created, "id")
	if !strings.HasPrefix(id, "ltp_") || created["name"] != "Canvas" || created["clientId"] != "10000000000042" {
		t.Fatalf("created: %v", created)
	}
	tool, _ := created["tool"].(map[string]any)
	for field, path := range map[string]string{"loginUrl": "/lti/login", "launchUrl": "/lti/launch", "deepLinkingUrl": "/lti/launch", "jwksUrl": "/lti/jwks"} {
		if tool[field] != e.Srv.URL+path {
			t.Errorf("tool.%s = %v, want %s", field, tool[field], e.Srv.URL+path)
		}
	}
	auditEntry(e, tn, "lti_platform.created", tn.Users[tenancy.RoleAdmin].ID, "lti_platform", id)

	e.Do("POST", "/lti/platforms", tn.Keys[tenancy.RoleTeacher], body).Must(t, 403)
	e.Do("GET", "/lti/platforms", tn.Keys[tenancy.RoleTeacher], nil).Must(t, 403)
	// The pair is unique across organizations: a login names only them.
	if r := e.Do("POST", "/lti/platforms", other.Keys[tenancy.RoleOwner], body).Must(t, 409); r.Reason() != "PLATFORM_TAKEN" {
		t.Fatalf("duplicate registration: %s", r.Raw)
	}
	for field, value := range map[string]any{
		"issuer":         "http://canvas.instructure.com",
		"authLoginUrl":   "not a url",
		"jwksUrl":        "https://127.0.0.1/jwks",
		"accessTokenUrl": "https://169.254.169.254/token",
		"clientId":       "has space",
		"deploymentIds":  []string{"a", "a"},
		"name":           "",
	} {
		bad := map[string]any{}
		for k, v := range body {
			bad[k] = v
		}
		bad["clientId"] = "another-client"
		bad[field] = value
		if r := e.Do("POST", "/lti/platforms", admin, bad).Must(t, 400); r.Field() != field {
			t.Errorf("bad %s: field %q, body %s", field, r.Field(), r.Raw)
		}
	}

	list := e.Do("GET", "/lti/platforms", tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body["platforms"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != id {
		t.Fatalf("list: %v", list)
	}
	e.Do("GET", "/lti/platforms/"+id, other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	e.Do("PATCH", "/lti/platforms/"+id, other.Keys[tenancy.RoleOwner], map[string]any{"name": "mine"}).Must(t, 404)
	updated := e.Do("PATCH", "/lti/platforms/"+id, admin, map[string]any{"deploymentIds": []string{"87:abc", "92:def"}}).Must(t, 200).Body
	if d := updated["deploymentIds"].([]any); len(d) != 2 || updated["name"] != "Canvas" {
		t.Fatalf("updated: %v", updated)
	}
	auditEntry(e, tn, "lti_platform.updated", tn.Users[tenancy.RoleAdmin].ID, "lti_platform", id)
	e.Do("DELETE", "/lti/platforms/"+id, admin, nil).Must(t, 200)
	e.Do("GET", "/lti/platforms/"+id, admin, nil).Must(t, 404)
	auditEntry(e, tn, "lti_platform.deleted", tn.Users[tenancy.RoleAdmin].ID, "lti_platform", id)
	// Once deleted, the pair is free for another organization.
	e.Do("POST", "/lti/platforms", other.Keys[tenancy.RoleOwner], body).Must(t, 200)
}

// TestLTIToolKeysArePublished serves the tool's JWKS: RSA signing keys,
// each with its kid, and no private part.
func TestLTIToolKeysArePublished(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	r := e.Do("GET", "/lti/jwks", "", nil).Must(t, 200)
	keys, _ := r.Body["keys"].([]any)
	if len(keys) != 1 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JWKS: %s", r.Raw)
	}
	k := keys[0].(map[string]any)
	if k["kty"] != "RSA" || k["alg"] != "RS256" || k["use"] != "sig" || k["kid"] == "" || k["d"] != nil || k["n"] == nil {
		t.Fatalf("JWKS key: %v", k)
	}
	// The OIDC provider's keys are a ring of their own.
	oidc := e.Do("GET", "/oauth/keys", "", nil).Must(t, 200).Body["keys"].([]any)
	if oidc[0].(map[string]any)["kid"] == k["kid"] {
		t.Fatal("the LTI tool signs with the OIDC provider's key")
	}
}

// TestLTILaunchesOpenTheAssignment drives launches end to end through the
// real server: an instructor's first launch creates their user and the
// course's class, with them as its teacher; a learner's launch of a link
// whose custom assignment_id names the class's assignment opens their
// attempt in the embedded student page, framed only by the platform; a
// second launch finds the same users; an instructor's launch of the link
// shows the assignment's progress and opens its exam's authoring page.
func TestLTILaunchesOpenTheAssignment(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	e := l.env
	owner := l.tn.Keys[tenancy.RoleOwner]

	first := l.platform.Run(t, l.client, instructor("teacher-1"))
	if first.Status != 200 || !strings.Contains(first.Body, "No assignment yet") {
		t.Fatalf("instructor's first launch: %d %s", first.Status, first.Body)
	}
	classes := e.Do("GET", "/classes", owner, nil).Must(t, 200).Body["classes"].([]any)
	if len(classes) != 1 || classes[0].(map[string]any)["name"] != "7B Mathematics" {
		t.Fatalf("classes after the first launch: %v", classes)
	}
	class := apptest.Str(classes[0].(map[string]any), "id")
	members := e.Do("GET", "/classes/"+class+"/members", owner, nil).Must(t, 200).Body["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["role"] != "teacher" || members[0].(map[string]any)["name"] != "Ines Instructor" {
		t.Fatalf("members after the instructor's launch: %v", members)
	}
	teacherID := apptest.Str(members[0].(map[string]any), "userId")
	if u := e.Do("GET", "/users/"+teacherID, owner, nil).Must(t, 200).Body; u["role"] != "teacher" || !strings.HasSuffix(apptest.Str(u, "email"), "@lti.invalid") {
		t.Fatalf("the instructor's user: %v", u)
	}
	entry := auditEntry(e, l.tn, "lti.launch", teacherID, "lti_platform", l.platformID)
	if after := entry["after"].(map[string]any); after["classId"] != class || after["contextId"] != "course-7b" || after["role"] != "teacher" {
		t.Fatalf("lti.launch entry: %v", entry)
	}

	// Staff give the course's class an exam.
	exam := apptest.Str(e.Do("POST", "/exams", owner, map[string]any{"name": "Fractions", "language": "en"}).Must(t, 200).Body, "id")
	e.Do("POST", "/exams/"+exam+"/questions", owner, map[string]any{"type": "true_false", "prompt": "One half is more than one third.",
		"config": map[string]any{"correct": true}}).Must(t, 200)
	now := time.Now().UTC()
	asg := apptest.Str(e.Do("POST", "/assignments", owner, map[string]any{"examId": exam, "classIds": []string{class},
		"opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)}).Must(t, 200).Body, "id")

	launch := learner("student-1")
	launch.Custom = map[string]string{"assignment_id": asg}
	launch.ReturnURL = l.platform.URL + "/course/return"
	res := l.platform.Run(t, l.client, launch)
	if res.Status != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), e.Srv.URL+"/embed/emb_") {
		t.Fatalf("learner's launch: %d %v %s", res.Status, res.Header, res.Body)
	}
	page, err := l.client.Get(res.Header.Get("Location")) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, page)
	if page.StatusCode != 200 || !strings.Contains(body, "One half is more than one third.") {
		t.Fatalf("the learner's attempt page: %d %s", page.StatusCode, body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors "+l.platform.URL) {
		t.Fatalf("the attempt page may be framed by %q, want the platform's origin", csp)
	}
	attempts := e.Do("GET", "/assignments/"+asg+"/attempts", owner, nil).Must(t, 200).Body["attempts"].([]any)
	if len(attempts) != 1 || attempts[0].(map[string]any)["status"] != "in_progress" {
		t.Fatalf("attempts after the learner's launch: %v", attempts)
	}
	studentID := apptest.Str(attempts[0].(map[string]any), "userId")
	if u := e.Do("GET", "/users/"+studentID, owner, nil).Must(t, 200).Body; u["role"] != "student" || u["email"] != "student-1@students.example" {
		t.Fatalf("the learner's user: %v", u)
	}

	// Users are matched by (issuer, sub): launching again creates no one.
	users := len(e.Do("GET", "/users?pageSize=200", owner, nil).Must(t, 200).Body["users"].([]any))
	again := l.platform.Run(t, l.client, launch)
	if again.Status != http.StatusSeeOther {
		t.Fatalf("learner's second launch: %d %s", again.Status, again.Body)
	}
	if n := len(e.Do("GET", "/users?pageSize=200", owner, nil).Must(t, 200).Body["users"].([]any)); n != users {
		t.Fatalf("users went from %d to %d on a returning launch", users, n)
	}
	auditEntry(e, l.tn, "lti.launch", studentID, "lti_platform", l.platformID)

	// The instructor's launch of the link: progress and the authoring page.
	teach := instructor("teacher-1")
	teach.Custom = map[string]string{"assignment_id": asg}
	res = l.platform.Run(t, l.client, teach)
	if res.Status != 200 || !strings.Contains(res.Body, `<dd id="in-progress">1</dd>`) || !strings.Contains(res.Body, `<dd id="assigned">1</dd>`) {
		t.Fatalf("instructor's launch of the link: %d %s", res.Status, res.Body)
	}
	edit := strings.Index(res.Body, `id="edit-exam" href="`)
	if edit < 0 {
		t.Fatalf("no authoring link: %s", res.Body)
	}
	href := res.Body[edit+len(`id="edit-exam" href="`):]
	href = href[:strings.Index(href, `"`)]
	authoring, err := l.client.Get(href) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, authoring); authoring.StatusCode != 200 || !strings.Contains(body, "One half is more than one third.") {
		t.Fatalf("authoring page: %d %s", authoring.StatusCode, body)
	}
}

// TestLTILaunchRolesAndPromotion: a mentor's launch is refused; a learner
// launched later as an instructor becomes a teacher; staff are never made
// students, and their learner launches are refused.
func TestLTILaunchRolesAndPromotion(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	mentor := &ltiplatform.Launch{Subject: "parent-1", Roles: []string{ltiplatform.RoleMentor}, Context: lmsCourse}
	if r := l.platform.Run(t, l.client, mentor); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "ROLE_UNSUPPORTED") {
		t.Fatalf("mentor's launch: %d %s", r.Status, r.Body)
	}
	if r := l.platform.Run(t, l.client, learner("ta-1")); r.Status != 200 || !strings.Contains(r.Body, "This link opens no assignment yet") {
		t.Fatalf("learner's launch of a link without an assignment: %d %s", r.Status, r.Body)
	}
	if r := l.platform.Run(t, l.client, instructor("ta-1")); r.Status != 200 {
		t.Fatalf("the former learner's instructor launch: %d %s", r.Status, r.Body)
	}
	users := l.Do("GET", "/users?role=teacher", l.tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body["users"].([]any)
	promoted := false
	for _, u := range users {
		promoted = promoted || u.(map[string]any)["email"] == "ta-1@students.example"
	}
	if !promoted {
		t.Fatalf("the learner launched as an instructor is not a teacher: %v", users)
	}
	if r := l.platform.Run(t, l.client, learner("ta-1")); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "LEARNER_IS_STAFF") {
		t.Fatalf("a teacher's learner launch: %d %s", r.Status, r.Body)
	}
}

// TestLTIRefusesBadLaunches sends launches broken one way each; every one
// is refused with a page saying why and an lti.launch_refused entry with
// the reason, in the organization the launch was for.
func TestLTIRefusesBadLaunches(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	// A nonce the tool issued before, for the replay.
	used := learner("replayer")
	if r := l.platform.Run(t, l.client, used); r.Status != 200 {
		t.Fatalf("the first launch: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name   string
		launch func(*ltiplatform.Launch)
		status int
		reason string
	}{
		{"wrong signature", func(x *ltiplatform.Launch) { x.Signing = ltiplatform.SignWrongKey }, 401, "SIGNATURE_INVALID"},
		{"unknown kid", func(x *ltiplatform.Launch) { x.Signing = ltiplatform.SignUnknownKid }, 401, "KEY_UNKNOWN"},
		{"expired token", func(x *ltiplatform.Launch) { x.ExpiresIn = -2 * time.Minute }, 401, "TOKEN_EXPIRED"},
		{"replayed nonce", func(x *ltiplatform.Launch) { x.Nonce = used.AskedNonce }, 401, "NONCE_MISMATCH"},
		{"wrong aud", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) { c["aud"] = []string{"another-tool"}; delete(c, "azp") }
		}, 401, "AUDIENCE_MISMATCH"},
		{"wrong azp", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) {
				c["aud"] = []string{l.platform.ClientID, "another-tool"}
				c["azp"] = "another-tool"
			}
		}, 401, "AZP_MISMATCH"},
		{"wrong issuer", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) { c["iss"] = "https://elsewhere.example" }
		}, 401, "ISSUER_MISMATCH"},
		{"unknown deployment", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) { c["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = "deployment-2" }
		}, 403, "DEPLOYMENT_UNKNOWN"},
		{"wrong version", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) { c["https://purl.imsglobal.org/spec/lti/claim/version"] = "1.1" }
		}, 400, "VERSION_UNSUPPORTED"},
		{"unknown message type", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) {
				c["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiSubmissionReviewRequest"
			}
		}, 400, "MESSAGE_TYPE_UNSUPPORTED"},
		{"issued in the future", func(x *ltiplatform.Launch) {
			x.Tamper = func(c map[string]any) { c["iat"] = time.Now().Add(10 * time.Minute).Unix() }
		}, 401, "TOKEN_NOT_YET_VALID"},
		{"missing state", func(x *ltiplatform.Launch) { x.OmitState = true }, 400, "STATE_MISSING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			launch := learner("student-" + strings.ReplaceAll(tc.name, " ", "-"))
			tc.launch(launch)
			r := l.platform.Run(t, l.client, launch)
			if r.Status != tc.status || !strings.Contains(r.Body, tc.reason) || !strings.Contains(r.Body, "Launch refused") {
				t.Fatalf("status %d, want %d with %s: %s", r.Status, tc.status, tc.reason, r.Body)
			}
			l.wantRefusal(t, tc.reason)
		})
	}
	// The same form posted again: its state was taken by the first post.
	replay := learner("student-replay")
	first := l.platform.Run(t, l.client, replay)
	second := ltiplatform.Post(t, l.client, l.Srv.URL+"/lti/launch", first.Form)
	if second.Status != 400 || !strings.Contains(second.Body, "STATE_UNKNOWN") {
		t.Fatalf("the launch posted twice: %d %s", second.Status, second.Body)
	}
	l.wantRefusal(t, "STATE_UNKNOWN")
	// A well-formed login whose platform nobody registered.
	resp, err := l.client.Get(l.Srv.URL + "/lti/login?" + url.Values{"iss": {"https://unknown.example"}, "login_hint": {"x"}, //nolint:noctx // a test request
		"target_link_uri": {l.Srv.URL + "/lti/launch"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != 404 || !strings.Contains(body, "PLATFORM_UNKNOWN") {
		t.Fatalf("login of an unknown platform: %d %s", resp.StatusCode, body)
	}
}

// wantRefusal finds the lti.launch_refused entry with reason.
func (l *ltiEnv) wantRefusal(t *testing.T, reason string) {
	t.Helper()
	r := l.Do("GET", "/audit-logs?action=lti.launch_refused&targetId="+l.platformID+"&pageSize=200", l.tn.Keys[tenancy.RoleOwner], nil).Must(t, 200)
	for _, e := range r.Body["auditLogs"].([]any) {
		entry := e.(map[string]any)
		if entry["after"].(map[string]any)["reason"] == reason {
			if actor := entry["actor"].(map[string]any); actor["kind"] != "system" || actor["id"] != l.platformID {
				t.Fatalf("refusal entry's actor: %v", actor)
			}
			return
		}
	}
	t.Fatalf("no lti.launch_refused entry with reason %s: %s", reason, r.Raw)
}

// TestLTIRefusesKeysOnPrivateAddresses: with the egress rules as in
// production, a JWKS URL on a private address is refused when the
// platform is registered, and a registration whose host came to resolve
// to one (DNS rebinding; here a row written as it might have been saved)
// has its launches refused without the keys ever being fetched.
func TestLTIRefusesKeysOnPrivateAddresses(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewURL(t)
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := apptest.NewOn(t, db, nil)
	tn := e.NewTenant("US", "pro")
	p := ltiplatform.New(t, e.Srv.URL)
	if r := e.Do("POST", "/lti/platforms", tn.Keys[tenancy.RoleAdmin], platformBody(p)).Must(t, 400); r.Field() != "issuer" {
		t.Fatalf("a loopback http registration: %s", r.Raw)
	}
	body := platformBody(p)
	body["issuer"], body["authLoginUrl"] = "https://lms.example", "https://lms.example/auth"
	if r := e.Do("POST", "/lti/platforms", tn.Keys[tenancy.RoleAdmin], body).Must(t, 400); r.Field() != "accessTokenUrl" && r.Field() != "jwksUrl" {
		t.Fatalf("a registration with loopback keys: %s", r.Raw)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	const id = "ltp_01JD3M4Q9ZB8K1T7W2X5C6V0NP"
	if _, err := conn.Exec(context.Background(), `INSERT INTO lti_platforms
		(id, org_id, name, issuer, client_id, deployment_ids, auth_login_url, access_token_url, jwks_url, created_by)
		VALUES ($1, $2, 'Rebound', $3, $4, $5, $6, $7, $8, 'test')`,
		id, tn.Org.ID, p.Issuer, p.ClientID, []string{p.DeploymentID}, p.AuthLoginURL(), p.TokenURL(), p.JWKSURL()); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r := p.Run(t, client, learner("student-1"))
	if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "KEYS_ADDRESS_FORBIDDEN") {
		t.Fatalf("launch with keys on loopback: %d %s", r.Status, r.Body)
	}
	if n := p.JWKSFetches(); n != 0 {
		t.Fatalf("the platform's keys were fetched %d times", n)
	}
	(&ltiEnv{env: e, tn: tn, platformID: id}).wantRefusal(t, "KEYS_ADDRESS_FORBIDDEN")
}

// readBody reads and closes resp's body.
func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLTIHostileInput sends the login and launch endpoints hostile
// parameters: each is refused with a 4xx page, never a 500.
func TestLTIHostileInput(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	hostile := []string{"", "\x00", "\xff\xfe", strings.Repeat("é", 40<<10), "<script>alert(1)</script>", "a.b.c",
		"eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", "eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.e30.AAAA", "\r\nSet-Cookie: x=y", l.platform.Issuer}
	for i, v := range hostile {
		login := url.Values{"iss": {v}, "login_hint": {v}, "target_link_uri": {l.Srv.URL + "/lti/launch"}, "client_id": {v}}
		if i%2 == 0 {
			login.Set("target_link_uri", v)
		}
		for _, resp := range []*http.Response{l.get(t, "/lti/login?"+login.Encode()), l.post(t, "/lti/login", login),
			l.post(t, "/lti/launch", url.Values{"id_token": {v}, "state": {v}}), l.post(t, "/lti/launch", url.Values{"id_token": {v}})} {
			body := readBody(t, resp)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%s %s with %q: %d %s", resp.Request.Method, resp.Request.URL.Path, v, resp.StatusCode, body)
			}
		}
	}
}

func (l *ltiEnv) get(t *testing.T, path string) *http.Response {
	t.Helper()
	resp, err := l.client.Get(l.Srv.URL + path) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (l *ltiEnv) post(t *testing.T, path string, form url.Values) *http.Response {
	t.Helper()
	resp, err := l.client.PostForm(l.Srv.URL+path, form) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestLTILaunchInABrowser launches a learner from the platform's course
// page, which frames the tool as an LMS does: the login, the platform's
// authentication and the launch run in the frame, which ends on the
// learner's attempt, framed by the platform and breaking no
// Content-Security-Policy; the page passes the accessibility checks.
func TestLTILaunchInABrowser(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	owner := l.tn.Keys[tenancy.RoleOwner]
	if r := l.platform.Run(t, l.client, instructor("teacher-1")); r.Status != 200 {
		t.Fatalf("instructor's launch: %d %s", r.Status, r.Body)
	}
	class := apptest.Str(l.Do("GET", "/classes", owner, nil).Must(t, 200).Body["classes"].([]any)[0].(map[string]any), "id")
	exam := apptest.Str(l.Do("POST", "/exams", owner, map[string]any{"name": "Fractions", "language": "en"}).Must(t, 200).Body, "id")
	l.Do("POST", "/exams/"+exam+"/questions", owner, map[string]any{"type": "true_false", "prompt": "One half is more than one third.",
		"config": map[string]any{"correct": true}}).Must(t, 200)
	now := time.Now().UTC()
	asg := apptest.Str(l.Do("POST", "/assignments", owner, map[string]any{"examId": exam, "classIds": []string{class},
		"opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)}).Must(t, 200).Body, "id")
	launch := learner("student-1")
	launch.Custom = map[string]string{"assignment_id": asg}

	ctx := browsertest.NewChrome(t)
	violations := browsertest.WatchCSP(t, ctx)
	var frameURL string
	err := chromedp.Run(ctx, chromedp.Navigate(l.platform.CoursePage(launch)), chromedp.ActionFunc(func(ctx context.Context) error {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			tree, err := cdppage.GetFrameTree().Do(ctx)
			if err != nil {
				return err
			}
			if len(tree.ChildFrames) == 1 {
				if frameURL = tree.ChildFrames[0].Frame.URL; strings.HasPrefix(frameURL, l.Srv.URL+"/embed/emb_") {
					return nil
				}
			}
			if err := chromedp.Sleep(100 * time.Millisecond).Do(ctx); err != nil {
				return err
			}
		}
		return fmt.Errorf("the tool's frame is at %q", frameURL)
	}))
	if err != nil {
		t.Fatalf("framed launch: %v", err)
	}
	var frames []*cdp.Node
	var text string
	var shot []byte
	err = chromedp.Run(ctx, chromedp.Nodes("#tool", &frames, chromedp.ByQuery))
	if err == nil {
		err = chromedp.Run(ctx, chromedp.WaitVisible("main", chromedp.ByQuery, chromedp.FromNode(frames[0])),
			chromedp.Text("main", &text, chromedp.ByQuery, chromedp.FromNode(frames[0])), chromedp.FullScreenshot(&shot, 100))
	}
	if err != nil {
		t.Fatalf("reading the framed attempt: %v", err)
	}
	browsertest.SaveArtifact(t, "lti-launch-framed.png", shot)
	if !strings.Contains(text, "One half is more than one third.") {
		t.Fatalf("the framed page shows: %s", text)
	}
	if v := violations(); len(v) > 0 {
		t.Fatalf("CSP violations: %v", v)
	}
	browsertest.CheckPage(t, ctx, frameURL, "lti-launch-attempt")
}

// TestLTIDeepLinkingLinksAnAssignment: an instructor's deep-linking
// request offers the organization's exams, searched by name; the choice makes an assignment
// of the course's class and answers a signed LtiDeepLinkingResponse, an
// ltiResourceLink with its line item, auto-posted to the platform, which
// verifies it with the tool's published keys; the link it made opens the
// learner's attempt; the choice is made once; learners are refused.
func TestLTIDeepLinkingLinksAnAssignment(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	owner := l.tn.Keys[tenancy.RoleOwner]
	exam := apptest.Str(l.Do("POST", "/exams", owner, map[string]any{"name": "Unit 1", "language": "en", "description": "Fractions and decimals"}).Must(t, 200).Body, "id")
	l.Do("POST", "/exams/"+exam+"/questions", owner, map[string]any{"type": "true_false", "prompt": "One half is more than one third.",
		"points": 2, "config": map[string]any{"correct": true}}).Must(t, 200)
	l.Do("POST", "/exams/"+exam+"/questions", owner, map[string]any{"type": "true_false", "prompt": "0.5 is one half.",
		"config": map[string]any{"correct": true}}).Must(t, 200)

	request := instructor("teacher-1")
	request.MessageType = ltiplatform.MessageDeepLinking
	res := l.platform.Run(t, l.client, request)
	action := regexp.MustCompile(`action="(/lti/deep-linking/[^"]+)"`).FindStringSubmatch(res.Body)
	if res.Status != 200 || action == nil || !strings.Contains(res.Body, `<option value="`+exam+`"`) {
		t.Fatalf("deep-linking request: %d %s", res.Status, res.Body)
	}
	choose := l.Srv.URL + action[1]
	// The picker searches the organization's exams by name, keeping the
	// search through a refused choice.
	other := apptest.Str(l.Do("POST", "/exams", owner, map[string]any{"name": "Botany", "language": "en"}).Must(t, 200).Body, "id")
	search := func(q string) string {
		t.Helper()
		resp := l.get(t, action[1]+"?q="+url.QueryEscape(q))
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("search %q: %d %s", q, resp.StatusCode, body)
		}
		return string(body)
	}
	if found := search("bota"); !strings.Contains(found, `<option value="`+other+`"`) || strings.Contains(found, `<option value="`+exam+`"`) ||
		!strings.Contains(found, `name="q" value="bota"`) {
		t.Fatalf("searching for bota: %s", found)
	}
	if none := search("chemistry"); strings.Contains(none, "<option") || !strings.Contains(none, "No exam") {
		t.Fatalf("searching for a name no exam has: %s", none)
	}
	now := time.Now().UTC().Truncate(time.Minute)
	form := url.Values{"examId": {exam}, "title": {"Unit 1 quiz"}, "opensAt": {now.Add(-time.Minute).Format("2006-01-02T15:04")},
		"closesAt": {now.Add(-time.Hour).Format("2006-01-02T15:04")}, "timeLimitMinutes": {"30"}, "maxAttempts": {"2"}}
	form.Set("q", "unit")
	if bad := ltiplatform.Post(t, l.client, choose, form); bad.Status != 400 || !strings.Contains(bad.Body, "closesAt") || !strings.Contains(bad.Body, "Unit 1 quiz") ||
		!strings.Contains(bad.Body, `name="q" value="unit"`) || strings.Contains(bad.Body, `<option value="`+other+`"`) {
		t.Fatalf("a close before the open: %d %s", bad.Status, bad.Body)
	}
	form.Del("q")
	form.Set("closesAt", now.Add(time.Hour).Format("2006-01-02T15:04"))
	answer := ltiplatform.Post(t, l.client, choose, form)
	if answer.Status != 200 || !strings.Contains(answer.Header.Get("Content-Security-Policy"), "form-action 'self' "+l.platform.URL) {
		t.Fatalf("the choice: %d %v %s", answer.Status, answer.Header, answer.Body)
	}
	back := regexp.MustCompile(`<form method="post" action="([^"]+)" data-autosubmit>`).FindStringSubmatch(answer.Body)
	token := regexp.MustCompile(`name="JWT" value="([^"]+)"`).FindStringSubmatch(answer.Body)
	if back == nil || token == nil || back[1] != l.platform.DeepLinkReturnURL() {
		t.Fatalf("the response's form: %s", answer.Body)
	}
	// A forged response is refused by the platform; the tool's is taken.
	if forged := ltiplatform.Post(t, l.client, back[1], url.Values{"JWT": {token[1][:len(token[1])-4] + "AAAA"}}); forged.Status != 400 {
		t.Fatalf("a forged response: %d %s", forged.Status, forged.Body)
	}
	if taken := ltiplatform.Post(t, l.client, back[1], url.Values{"JWT": {token[1]}}); taken.Status != 200 || !strings.Contains(taken.Body, "Added 1 item") {
		t.Fatalf("the platform refused the response: %d %s", taken.Status, taken.Body)
	}
	links := l.platform.DeepLinks()
	if len(links) != 1 || len(links[0].Items) != 1 {
		t.Fatalf("deep links: %v", links)
	}
	item := links[0].Items[0]
	custom, _ := item["custom"].(map[string]any)
	lineItem, _ := item["lineItem"].(map[string]any)
	asg, _ := custom["assignment_id"].(string)
	if item["title"] != "Unit 1 quiz" || item["url"] != l.Srv.URL+"/lti/launch" || item["text"] != "Fractions and decimals" ||
		lineItem["scoreMaximum"] != 3.0 || lineItem["resourceId"] != asg || lineItem["label"] != "Unit 1 quiz" {
		t.Fatalf("content item: %v", item)
	}
	a := l.Do("GET", "/assignments/"+asg, owner, nil).Must(t, 200).Body
	classes := l.Do("GET", "/classes", owner, nil).Must(t, 200).Body["classes"].([]any)
	if a["examId"] != exam || a["timeLimitMinutes"] != 30.0 || a["maxAttempts"] != 2.0 || len(classes) != 1 ||
		a["classIds"].([]any)[0] != classes[0].(map[string]any)["id"] {
		t.Fatalf("the linked assignment: %v (classes %v)", a, classes)
	}
	if entry := auditEntry(l.env, l.tn, "assignment.created", apptest.Str(a, "createdBy"), "assignment", asg); entry["actor"].(map[string]any)["kind"] != "user" {
		t.Fatalf("assignment.created: %v", entry)
	}
	// The choice is made once.
	if again := ltiplatform.Post(t, l.client, choose, form); again.Status != 400 || !strings.Contains(again.Body, "DEEP_LINKING_GONE") {
		t.Fatalf("the choice made again: %d %s", again.Status, again.Body)
	}
	// The link opens the learner's attempt.
	launch := learner("student-1")
	launch.Custom = map[string]string{"assignment_id": asg}
	if r := l.platform.Run(t, l.client, launch); r.Status != http.StatusSeeOther || !strings.Contains(r.Header.Get("Location"), "/embed/emb_") {
		t.Fatalf("the learner's launch of the link: %d %s", r.Status, r.Body)
	}
	// Learners choose nothing.
	learnerRequest := learner("student-2")
	learnerRequest.MessageType = ltiplatform.MessageDeepLinking
	if r := l.platform.Run(t, l.client, learnerRequest); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "DEEP_LINKING_NOT_INSTRUCTOR") {
		t.Fatalf("a learner's deep-linking request: %d %s", r.Status, r.Body)
	}
}
