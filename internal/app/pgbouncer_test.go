package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestIsolationBehindTransactionPooling runs two instances through a
// transaction-pooling PgBouncer with three server connections, so
// consecutive statements of one request land on connections another
// organization used last. Hundreds of concurrent reads and writes by two
// organizations must never see a foreign row, and a key revoked on one
// instance must be refused by the other within a second (its listener is
// on the direct URL).
func TestIsolationBehindTransactionPooling(t *testing.T) {
	t.Parallel()
	direct := storetest.NewURL(t)
	pooled := storetest.PgBouncer(t, direct, 3)
	ctx := context.Background()
	open := func() *store.DB {
		db, err := store.Open(ctx, pooled+"&pool_max_conns=6", store.WithDirectURL(direct))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		if err := db.CheckIsolation(ctx); err != nil {
			t.Fatalf("through PgBouncer: %v", err)
		}
		return db
	}
	a, b := apptest.NewOn(t, open(), nil), apptest.NewOn(t, open(), nil)
	tenants := []tenant{a.NewTenant("US", "pro"), b.NewTenant("DE", "pro")}

	const requests = 600
	var sent, foreign, failed atomic.Int64
	var firstFailure sync.Once
	var failure string
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				e, tn := []*env{a, b}[i%2], tenants[(i/2)%2]
				n, err := checkedRequest(e, tn, i)
				sent.Add(1)
				foreign.Add(int64(n))
				if err != nil {
					failed.Add(1)
					firstFailure.Do(func() { failure = err.Error() })
				}
			}
		}()
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("requests sent: %d through PgBouncer (3 server connections), foreign rows seen: %d, failed: %d",
		sent.Load(), foreign.Load(), failed.Load())
	if foreign.Load() != 0 || failed.Load() != 0 {
		t.Fatalf("%d foreign rows seen, %d requests failed; first failure: %s", foreign.Load(), failed.Load(), failure)
	}

	// Revocation: instance b caches the teacher's key, instance a revokes it.
	key := tenants[0].Keys[tenancy.RoleTeacher]
	eventually.Succeeds(t, 5*time.Second, func() error {
		if !a.App.Tenancy.CredentialListenerUp() || !b.App.Tenancy.CredentialListenerUp() {
			return errors.New("credential listeners not connected")
		}
		return nil
	})
	b.Do("GET", "/me", key, nil).Must(t, http.StatusOK)
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(tenants[0].Org.ID))
	keys, err := a.App.Tenancy.ListAPIKeys(sys, tenants[0].Users[tenancy.RoleTeacher].ID)
	if err != nil || len(keys) != 1 {
		t.Fatalf("ListAPIKeys = %v, %v", keys, err)
	}
	if err := a.App.Tenancy.RevokeAPIKey(sys, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	eventually.Succeeds(t, time.Second, func() error {
		switch status := b.Do("GET", "/me", key, nil).Status; status {
		case http.StatusUnauthorized:
			return nil
		case http.StatusOK:
			return errors.New("instance b still accepts a key revoked on instance a")
		default:
			t.Fatalf("GET /me with the revoked key: status %d", status)
			return nil
		}
	})
	t.Logf("revocation on instance a refused by instance b after %v", time.Since(revoked).Round(time.Millisecond))
}

// checkedRequest sends request i of a mix of reads and writes as a member
// of tn and returns how many rows of another organization it saw, and an
// error for any other wrong answer.
func checkedRequest(e *env, tn tenant, i int) (int, error) {
	own := map[string]bool{}
	for _, u := range tn.Users {
		own[u.ID] = true
	}
	switch i % 3 {
	case 0: // list every user: exactly the organization's own
		var body struct {
			Users []struct{ ID, OrgID string }
		}
		if err := call(e, "GET", "/users", tn.Keys[tenancy.RoleAdmin], nil, &body); err != nil {
			return 0, err
		}
		foreign := 0
		for _, u := range body.Users {
			if !own[u.ID] || u.OrgID != tn.Org.ID {
				foreign++
			}
		}
		if foreign == 0 && len(body.Users) != len(own) {
			return 0, fmt.Errorf("GET /users listed %d users, want %d", len(body.Users), len(own))
		}
		return foreign, nil
	case 1: // read the caller
		var me struct{ ID, OrgID string }
		if err := call(e, "GET", "/me", tn.Keys[tenancy.RoleTeacher], nil, &me); err != nil {
			return 0, err
		}
		if me.ID != tn.Users[tenancy.RoleTeacher].ID || me.OrgID != tn.Org.ID {
			return 1, nil
		}
		return 0, nil
	default: // write: rename the caller
		var me struct{ ID, OrgID, Name string }
		name := fmt.Sprintf("Student %d", i)
		if err := call(e, "PATCH", "/me", tn.Keys[tenancy.RoleStudent], map[string]any{"name": name}, &me); err != nil {
			return 0, err
		}
		if me.ID != tn.Users[tenancy.RoleStudent].ID || me.OrgID != tn.Org.ID {
			return 1, nil
		}
		return 0, nil
	}
}

// call sends one request and decodes its 200 answer into out; unlike
// env.do it is safe in goroutines other than the test's.
func call(e *env, method, path, key string, body, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	req, err := http.NewRequest(method, e.Srv.URL+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.Srv.Client().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d: %s", method, path, res.StatusCode, raw.String())
	}
	return json.Unmarshal(raw.Bytes(), out)
}

// TestAttemptServedAlternatelyBehindTransactionPooling: one student's
// attempt is served by two instances in turn, both through a
// transaction-pooling PgBouncer with two server connections, while a second
// organization's student saves beside it. Every acknowledged save is
// there, as the last value of its question with one revision per save, in
// the order sent, and the submitted result holds the last values.
func TestAttemptServedAlternatelyBehindTransactionPooling(t *testing.T) {
	t.Parallel()
	direct := storetest.NewURL(t)
	pooled := storetest.PgBouncer(t, direct, 2)
	ctx := context.Background()
	open := func() *store.DB {
		db, err := store.Open(ctx, pooled+"&pool_max_conns=4", store.WithDirectURL(direct))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	instances := []*env{apptest.NewOn(t, open(), nil), apptest.NewOn(t, open(), nil)}
	type taker struct {
		tn       tenant
		attempt  string
		question []string
	}
	var takers []*taker
	for _, country := range []string{"US", "DE"} {
		tn := instances[0].NewTenant(country, "enterprise")
		teacher, student := tn.Keys[tenancy.RoleTeacher], tn.Keys[tenancy.RoleStudent]
		exam := apptest.Str(instances[0].Do("POST", "/exams", teacher, map[string]any{"name": "Pooled", "language": "en"}).Must(t, 200).Body, "id")
		tk := &taker{tn: tn}
		for i := range 3 {
			q := instances[0].Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric",
				"prompt": fmt.Sprintf("Question %d?", i), "config": map[string]any{"correct": 29}}).Must(t, 200).Body
			tk.question = append(tk.question, apptest.Str(q, "id"))
		}
		now := time.Now().UTC()
		asg := instances[1].Do("POST", "/assignments", teacher, map[string]any{"examId": exam, "userIds": []string{tn.Users[tenancy.RoleStudent].ID},
			"opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)}).Must(t, 200).Body
		tk.attempt = apptest.Str(instances[0].Do("POST", "/assignments/"+apptest.Str(asg, "id")+"/attempts", student, map[string]any{}).Must(t, 200).Body, "id")
		takers = append(takers, tk)
	}
	const saves = 30 // per question
	var wg sync.WaitGroup
	for _, tk := range takers {
		wg.Go(func() {
			student := tk.tn.Keys[tenancy.RoleStudent]
			for n := range saves {
				for qi, q := range tk.question {
					r := instances[(n+qi)%2].Do("PUT", "/attempts/"+tk.attempt+"/responses/"+q, student, map[string]any{"value": n})
					if r.Status != http.StatusOK || r.Body["revision"] != float64(n+1) || r.Body["value"] != float64(n) {
						t.Errorf("save %d of %s on instance %d: %d %s", n, q, (n+qi)%2, r.Status, r.Raw)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for i, tk := range takers {
		student := tk.tn.Keys[tenancy.RoleStudent]
		read := instances[i%2].Do("GET", "/attempts/"+tk.attempt, student, nil).Must(t, 200).Body
		for _, r := range read["responses"].([]any) {
			resp := r.(map[string]any)
			if resp["revision"] != float64(saves) || resp["value"] != float64(saves-1) {
				t.Errorf("attempt %s: %v; want revision %d with value %d", tk.attempt, resp, saves, saves-1)
			}
		}
		done := instances[(i+1)%2].Do("POST", "/attempts/"+tk.attempt+"/submit", student, map[string]any{}).Must(t, 200).Body
		res := instances[i%2].Do("GET", "/results/"+apptest.Str(done, "resultId"), student, nil).Must(t, 200).Body
		for _, a := range res["answers"].([]any) {
			if v := a.(map[string]any)["value"]; v != float64(saves-1) {
				t.Errorf("result of %s: answer %v; want %d", tk.attempt, a, saves-1)
			}
		}
	}
}
