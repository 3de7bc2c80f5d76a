package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	webhookworkflow "github.com/assessd/assessd/workflows/webhooks"
)

// TestWebhookEndpointsAPI manages an endpoint over HTTP: only owners and
// admins with the webhooks scopes may, the secret is shown at creation and
// rotation only, internal targets are refused, another organization sees
// nothing, and every change is audited.
func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", tenancy.PlanPro)
	other := e.NewTenant("FR", tenancy.PlanPro)
	owner, teacher := tn.Keys[tenancy.RoleOwner], tn.Keys[tenancy.RoleTeacher]
	body := map[string]any{"url": "https://93.184.215.14/hooks", "events": []string{"result.graded", "user.created"}, "description": "sync"}

	e.Do("POST", "/webhook-endpoints", teacher, body).Must(t, http.StatusForbidden)
	e.Do("GET", "/webhook-endpoints", teacher, nil).Must(t, http.StatusForbidden)
	for _, u := range []string{"https://127.0.0.1/x", "https://localhost/x", "https://10.0.0.7/", "https://169.254.169.254/latest/meta-data",
		"https://[fd00:ec2::254]/", "https://[::1]/", "https://100.64.0.1/", "http://93.184.215.14/"} {
		r := e.Do("POST", "/webhook-endpoints", owner, map[string]any{"url": u, "events": []string{"user.created"}}).Must(t, http.StatusBadRequest)
		if r.Field() != "url" {
			t.Errorf("%s refused naming %q: %s", u, r.Field(), r.Raw)
		}
	}
	if r := e.Do("POST", "/webhook-endpoints", owner, map[string]any{"url": body["url"], "events": []string{"exam.deleted"}}).Must(t, http.StatusBadRequest); r.Field() != "events.0" {
		t.Errorf("unknown event refused naming %q", r.Field())
	}

	created := e.Do("POST", "/webhook-endpoints", owner, body).Must(t, http.StatusOK).Body
	id, secret := apptest.Str(created, "id"), apptest.Str(created, "secret")
	if !strings.HasPrefix(id, "whe_") || !strings.HasPrefix(secret, "whsec_") || created["enabled"] != true {
		t.Fatalf("created %v", created)
	}
	got := e.Do("GET", "/webhook-endpoints/"+id, owner, nil).Must(t, http.StatusOK).Body
	if got["secret"] != "" || got["url"] != body["url"] {
		t.Fatalf("read back %v: the secret must not be shown again", got)
	}
	if list := apptest.Items(e.Do("GET", "/webhook-endpoints", owner, nil).Must(t, http.StatusOK).Body, "webhookEndpoints"); len(list) != 1 || list[0]["secret"] != "" {
		t.Fatalf("list %v", list)
	}
	e.Do("GET", "/webhook-endpoints/"+id, other.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusNotFound)
	e.Do("DELETE", "/webhook-endpoints/"+id, other.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusNotFound)

	patched := e.Do("PATCH", "/webhook-endpoints/"+id, owner, map[string]any{"events": []string{"user.deleted"}, "enabled": false}).Must(t, http.StatusOK).Body
	if fmt.Sprint(patched["events"]) != "[user.deleted]" || patched["enabled"] != false || patched["description"] != "sync" {
		t.Fatalf("patched %v", patched)
	}
	rotated := e.Do("POST", "/webhook-endpoints/"+id+"/rotate-secret", owner, map[string]any{}).Must(t, http.StatusOK).Body
	if s := apptest.Str(rotated, "secret"); !strings.HasPrefix(s, "whsec_") || s == secret {
		t.Fatalf("rotated secret %q", s)
	}
	if d := apptest.Items(e.Do("GET", "/webhook-endpoints/"+id+"/deliveries", owner, nil).Must(t, http.StatusOK).Body, "webhookDeliveries"); len(d) != 0 {
		t.Fatalf("deliveries before any event: %v", d)
	}
	e.Do("DELETE", "/webhook-endpoints/"+id, owner, nil).Must(t, http.StatusOK)
	e.Do("GET", "/webhook-endpoints/"+id, owner, nil).Must(t, http.StatusNotFound)

	var actions []string
	for _, a := range apptest.Items(e.Do("GET", "/audit-logs?targetId="+id, owner, nil).Must(t, http.StatusOK).Body, "auditLogs") {
		actions = append(actions, apptest.Str(a, "action"))
	}
	slices.Sort(actions)
	if want := []string{"webhook_endpoint.created", "webhook_endpoint.deleted", "webhook_endpoint.secret_rotated", "webhook_endpoint.updated"}; !slices.Equal(actions, want) {
		t.Fatalf("audit actions %v, want %v", actions, want)
	}
	// The secret is stored sealed, never in the clear.
	var stored []byte
	if err := e.DB.Unscoped().QueryRow(context.Background(), `SELECT value FROM provider_secrets WHERE name = 'webhook_secret_key'`).Scan(&stored); err != nil || len(stored) != 32 {
		t.Fatalf("sealing key %d bytes, %v", len(stored), err)
	}
}

// receiver is an integrator's endpoint: it records every delivery and
// answers 503 while it is down.
type receiver struct {
	mu        sync.Mutex
	got       []delivery
	downFor   int  // the next downFor requests fail
	alwaysErr bool // every request fails
	srv       *httptest.Server
}

type delivery struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.alwaysErr || rc.downFor > 0 {
			rc.downFor--
			// A receiver may answer anything, bytes PostgreSQL cannot
			// store in text included.
			http.Error(w, "down for maintenance\x00\xff", http.StatusServiceUnavailable)
			return
		}
		rc.got = append(rc.got, delivery{Body: string(body), Headers: map[string]string{
			"webhook-id": r.Header.Get("webhook-id"), "webhook-timestamp": r.Header.Get("webhook-timestamp"),
			"webhook-signature": r.Header.Get("webhook-signature")}})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// waitFor waits until n deliveries arrived and returns them.
func (rc *receiver) waitFor(t *testing.T, n int) []delivery {
	t.Helper()
	eventually.Succeeds(t, time.Minute, func() error {
		if got := len(rc.deliveries()); got < n {
			return fmt.Errorf("%d of %d deliveries", got, n)
		}
		return nil
	})
	return rc.deliveries()
}

// verify checks a delivery as a Standard Webhooks receiver would, written
// from the specification: one of the v1 signatures is the HMAC-SHA256 of
// "id.timestamp.body" keyed with the secret's base64 part, and the
// timestamp is within five minutes.
func verify(secret string, d delivery) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	ts, err := strconv.ParseInt(d.Headers["webhook-timestamp"], 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q", d.Headers["webhook-timestamp"])
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(d.Headers["webhook-id"] + "." + d.Headers["webhook-timestamp"] + "." + d.Body))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for sig := range strings.FieldsSeq(d.Headers["webhook-signature"]) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no signature matches")
}

// verifyWithReferenceLibrary verifies deliveries with the official
// standardwebhooks npm package (tools/webhook-verify); it skips when the
// package is not installed (make webhook-verify).
func verifyWithReferenceLibrary(t *testing.T, secret string, ds []delivery) {
	t.Helper()
	if testing.Short() {
		t.Log("-short: the reference library check, which runs Node, is skipped")
		return
	}
	dir := filepath.Join("..", "..", "tools", "webhook-verify")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		t.Log("tools/webhook-verify is not installed (make webhook-verify): the reference library check is skipped")
		return
	}
	var in strings.Builder
	for _, d := range ds {
		line, _ := json.Marshal(map[string]any{"secret": secret, "headers": d.Headers, "body": d.Body})
		in.Write(append(line, '\n'))
	}
	cmd := exec.Command("node", "verify.mjs")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("standardwebhooks refused a delivery: %v\n%s", err, out)
	}
	t.Logf("standardwebhooks: %s", strings.TrimSpace(string(out)))
}

// TestWebhookDeliveries is an integrator's day: it registers an endpoint,
// every event arrives signed so that both a verifier written from the
// specification and the reference library accept it, with the resource as
// the API returns it; its outage is retried until it is back; a rotation
// signs with both secrets; a delivery can be sent again with the same id;
// an endpoint that never recovers is disabled and the owner told in the
// audit log. The EU organization's deliveries run on the EU queue.
func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	tc := devenvtest.Temporal(t)
	e := apptest.NewWithConfig(t, func(c *app.Config) {
		c.Temporal = tc
		c.Dispatch = workflows.DispatchOptions{Sweep: 200 * time.Millisecond}
		c.Webhooks = egress.Targets{AllowPrivate: true}
		c.WebhookRetry = webhookworkflow.Retry{Initial: 200 * time.Millisecond, Window: 4 * time.Second}
	})
	grading := gradingactivities.NewMetrics(e.App.Metrics.Registry, e.App.Metrics.Org)
	for _, region := range []string{"eu", "global"} {
		w, err := app.NewWorker(tc, e.DB, app.WorkerConfig{Region: region, Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
			Metrics: grading, Registry: e.App.Metrics.Registry, Webhooks: egress.Targets{AllowPrivate: true}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	tn := e.NewTenant("DE", tenancy.PlanPro)
	owner := tn.Keys[tenancy.RoleOwner]
	rc := newReceiver(t)
	ep := e.Do("POST", "/webhook-endpoints", owner, map[string]any{"url": rc.srv.URL + "/hooks",
		"events": []string{"user.created", "user.updated", "user.deleted"}}).Must(t, http.StatusOK).Body
	epID, secret := apptest.Str(ep, "id"), apptest.Str(ep, "secret")

	// The receiver is down for its first two requests: the event is retried.
	rc.mu.Lock()
	rc.downFor = 2
	rc.mu.Unlock()
	user := e.Do("POST", "/users", owner, map[string]any{"email": "grace@school.test", "name": "Grace"}).Must(t, http.StatusOK)
	userID := apptest.Str(user.Body, "id")
	e.Do("PATCH", "/users/"+userID, owner, map[string]any{"name": "Grace Hopper"}).Must(t, http.StatusOK)
	e.Do("DELETE", "/users/"+userID, owner, nil).Must(t, http.StatusOK)
	ds := rc.waitFor(t, 3)

	types := map[string]map[string]any{}
	for _, d := range ds {
		if err := verify(secret, d); err != nil {
			t.Fatalf("delivery %s: %v", d.Headers["webhook-id"], err)
		}
		if !strings.HasPrefix(d.Headers["webhook-id"], "msg_") {
			t.Fatalf("webhook-id %q", d.Headers["webhook-id"])
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(d.Body), &p); err != nil {
			t.Fatal(err)
		}
		data, _ := p["data"].(map[string]any)
		types[apptest.Str(p, "type")] = data
		if _, err := time.Parse(time.RFC3339, apptest.Str(p, "timestamp")); err != nil {
			t.Fatalf("payload timestamp: %s", d.Body)
		}
	}
	var apiUser map[string]any
	_ = json.Unmarshal(user.Raw, &apiUser)
	if created := types["user.created"]; fmt.Sprint(created) != fmt.Sprint(apiUser) {
		t.Fatalf("user.created data %v, want the API's user %v", created, apiUser)
	}
	if types["user.updated"]["name"] != "Grace Hopper" || types["user.deleted"]["id"] != userID {
		t.Fatalf("events %v", types)
	}
	verifyWithReferenceLibrary(t, secret, ds)

	attempts := apptest.Items(e.Do("GET", "/webhook-endpoints/"+epID+"/deliveries", owner, nil).Must(t, http.StatusOK).Body, "webhookDeliveries")
	var failed, succeeded int
	for _, a := range attempts {
		switch a["status"] {
		case "failed":
			failed++
			if a["responseCode"] != float64(503) || !strings.Contains(apptest.Str(a, "responseExcerpt"), "down for maintenance") {
				t.Fatalf("failed attempt %v", a)
			}
		case "succeeded":
			succeeded++
		}
	}
	if failed != 2 || succeeded != 3 {
		t.Fatalf("%d failed and %d succeeded attempts, want 2 and 3: %v", failed, succeeded, attempts)
	}

	// The EU organization's event ran on the EU queue.
	desc, err := tc.DescribeWorkflowExecution(context.Background(), "webhook-"+ds[0].Headers["webhook-id"], "")
	if err != nil {
		t.Fatal(err)
	}
	if q := desc.GetExecutionConfig().GetTaskQueue().GetName(); q != "grading-eu" {
		t.Fatalf("delivered from task queue %q, want grading-eu", q)
	}

	// Rotation: both the new and the previous secret verify the next one.
	newSecret := apptest.Str(e.Do("POST", "/webhook-endpoints/"+epID+"/rotate-secret", owner, map[string]any{}).Must(t, http.StatusOK).Body, "secret")
	e.Do("POST", "/users", owner, map[string]any{"email": "ada@school.test", "name": "Ada"}).Must(t, http.StatusOK)
	rotated := rc.waitFor(t, 4)[3]
	if err := verify(newSecret, rotated); err != nil {
		t.Fatalf("new secret: %v", err)
	}
	if err := verify(secret, rotated); err != nil {
		t.Fatalf("previous secret during the rotation window: %v", err)
	}
	verifyWithReferenceLibrary(t, newSecret, []delivery{rotated})
	verifyWithReferenceLibrary(t, secret, []delivery{rotated})

	// Redelivery sends the same message again.
	e.Do("POST", "/webhook-endpoints/"+epID+"/deliveries/"+apptest.Str(attempts[0], "id")+"/redeliver", owner, map[string]any{}).Must(t, http.StatusOK)
	again := rc.waitFor(t, 5)[4]
	if again.Headers["webhook-id"] != apptest.Str(attempts[0], "eventId") {
		t.Fatalf("redelivered %s, want %s", again.Headers["webhook-id"], apptest.Str(attempts[0], "eventId"))
	}

	// A rule-scored result is graded at submission: result.graded carries
	// the result exactly as GET returns it.
	results := newReceiver(t)
	resultsSecret := apptest.Str(e.Do("POST", "/webhook-endpoints", owner, map[string]any{"url": results.srv.URL,
		"events": []string{"result.graded"}}).Must(t, http.StatusOK).Body, "secret")
	staff := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	exam, err := e.App.Assessment.CreateExam(staff, assessment.NewExam{Name: "Quiz", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.App.Assessment.CreateQuestion(staff, exam.ID, assessment.NewQuestion{Type: assessment.TypeMultipleChoice, Prompt: "1/2?", Points: 1,
		Config: map[string]any{"options": []any{map[string]any{"id": "a", "text": "0.5", "correct": true}, map[string]any{"id": "b", "text": "2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	submitted := e.Do("POST", "/exams/"+exam.ID+"/results", owner, map[string]any{"userId": tn.Users[tenancy.RoleStudent].ID,
		"answers": []any{map[string]any{"questionId": q.ID, "value": "a"}}}).Must(t, http.StatusOK)
	graded := results.waitFor(t, 1)[0]
	if err := verify(resultsSecret, graded); err != nil {
		t.Fatal(err)
	}
	var payload struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal([]byte(graded.Body), &payload)
	got := e.Do("GET", "/exams/"+exam.ID+"/results/"+apptest.Str(submitted.Body, "id"), owner, nil).Must(t, http.StatusOK)
	if payload.Type != "result.graded" || string(payload.Data) != string(got.Raw) {
		t.Fatalf("result.graded data\n%s\nwant the API's result\n%s", payload.Data, got.Raw)
	}

	// An endpoint that never recovers is disabled after the retry window.
	rc.mu.Lock()
	rc.alwaysErr = true
	rc.mu.Unlock()
	e.Do("POST", "/users", owner, map[string]any{"email": "lin@school.test", "name": "Lin"}).Must(t, http.StatusOK)
	eventually.Succeeds(t, time.Minute, func() error {
		r := e.Do("GET", "/webhook-endpoints/"+epID, owner, nil).Must(t, http.StatusOK).Body
		if r["enabled"] != false || apptest.Str(r, "disabledReason") == "" {
			return fmt.Errorf("endpoint %v", r)
		}
		return nil
	})
	entries := apptest.Items(e.Do("GET", "/audit-logs?action=webhook_endpoint.disabled", owner, nil).Must(t, http.StatusOK).Body, "auditLogs")
	if len(entries) != 1 || apptest.Str(entries[0], "targetId") != epID && fmt.Sprint(entries[0]["target"]) != fmt.Sprint(map[string]any{"type": "webhook_endpoint", "id": epID}) {
		t.Fatalf("audit entries %v", entries)
	}
	waitMetric(t, e, `assessd_webhook_deliveries_total{event="user.created",org="`+tn.Org.ID+`",outcome="delivered"}`, func(v float64) bool { return v >= 2 })
}
