package serviceaccounts_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity/serviceaccounts"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// signedInServiceAccount starts an environment with a teacher service
// account of a new organization and a key of it, checks that the token its
// assertion obtains reads /users, and returns them with a second
// organization's system caller.
func signedInServiceAccount(t *testing.T) (e *apptest.Env, tn apptest.Tenant, sa apptest.ServiceAccount, key apptest.SigningKey, jwt string, foreign context.Context) {
	e = apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	sa = e.NewServiceAccount(tn, tenancy.RoleTeacher)
	key = e.AddKey(sa)
	_, jwt, _ = e.ExchangeAssertion(sa, key, "users:read")
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusOK)
	return e, tn, sa, key, jwt, tenancy.WithCaller(context.Background(), tenancy.SystemCaller(other.Org.ID))
}

// TestServiceAccountRevocation: a revoked key obtains no token while the
// tokens it obtained run out their hour; a disabled account's tokens are
// refused at once and work again once it is enabled; an account holds at
// most MaxServiceAccountKeys active keys, and revoking one makes room.
func TestServiceAccountRevocation(t *testing.T) {
	t.Parallel()
	e, tn, sa, key, jwt, foreign := signedInServiceAccount(t)
	if err := e.App.ServiceAccounts.RevokeServiceAccountKey(foreign, key.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("another organization revoking the key: %v, want not found", err)
	}
	if err := e.App.ServiceAccounts.SetServiceAccountDisabled(foreign, sa.ID, true); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("another organization disabling the account: %v, want not found", err)
	}
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusOK)

	if err := e.App.ServiceAccounts.RevokeServiceAccountKey(sa.Ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	// RFC 7523, section 3.1: an assertion that does not verify is invalid_grant.
	if status, tok, code := e.ExchangeAssertion(sa, key, "users:read"); status != http.StatusBadRequest || tok != "" || code != "invalid_grant" {
		t.Fatalf("a revoked key: %d %q, want 400 invalid_grant", status, code)
	}
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusOK)

	if err := e.App.ServiceAccounts.SetServiceAccountDisabled(sa.Ctx, sa.ID, true); err != nil {
		t.Fatal(err)
	}
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusUnauthorized)
	if err := e.App.ServiceAccounts.SetServiceAccountDisabled(sa.Ctx, sa.ID, false); err != nil {
		t.Fatal(err)
	}
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusOK)

	for range serviceaccounts.MaxServiceAccountKeys {
		key = e.AddKey(sa)
	}
	if _, err := e.TryAddKey(sa); !isConflict(err, "SERVICE_ACCOUNT_KEY_LIMIT") {
		t.Fatalf("key %d: %v, want SERVICE_ACCOUNT_KEY_LIMIT", serviceaccounts.MaxServiceAccountKeys+1, err)
	}
	keys, err := e.App.ServiceAccounts.ServiceAccountKeys(sa.Ctx, sa.ID)
	if err != nil || len(keys) != serviceaccounts.MaxServiceAccountKeys+1 || keys[0].ID != key.ID || keys[len(keys)-1].RevokedAt == nil {
		t.Fatalf("keys: %v %+v, want the %d active newest first and the revoked one last", err, keys, serviceaccounts.MaxServiceAccountKeys)
	}
	if err := e.App.ServiceAccounts.RevokeServiceAccountKey(sa.Ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	e.AddKey(sa)

	logged := e.Do("GET", "/audit-logs?targetId="+sa.ID, tn.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	for _, action := range []string{"service_account.key_revoked", "service_account.disabled", "service_account.enabled"} {
		if !strings.Contains(string(logged.Raw), `"`+action+`"`) {
			t.Errorf("no %s entry: %s", action, logged.Raw)
		}
	}
}

// TestServiceAccountDeletion: a deleted account's tokens and keys are
// refused at once, the deletion is audited, and an organization holds at
// most MaxServiceAccounts accounts, deleting one making room.
func TestServiceAccountDeletion(t *testing.T) {
	t.Parallel()
	e, tn, sa, key, jwt, foreign := signedInServiceAccount(t)
	if err := e.App.ServiceAccounts.DeleteServiceAccount(foreign, sa.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("another organization deleting the account: %v, want not found", err)
	}
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusOK)

	if err := e.App.ServiceAccounts.DeleteServiceAccount(sa.Ctx, sa.ID); err != nil {
		t.Fatal(err)
	}
	e.Do("GET", "/users", jwt, nil).Must(t, http.StatusUnauthorized)
	if status, tok, code := e.ExchangeAssertion(sa, key, "users:read"); status != http.StatusBadRequest || tok != "" || code != "invalid_grant" {
		t.Fatalf("a deleted account's key: %d %q, want 400 invalid_grant", status, code)
	}
	if err := e.App.ServiceAccounts.DeleteServiceAccount(sa.Ctx, sa.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("deleting it again: %v, want not found", err)
	}
	if _, err := e.App.ServiceAccounts.ServiceAccountKeys(sa.Ctx, sa.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("its keys: %v, want not found", err)
	}
	logged := e.Do("GET", "/audit-logs?action=service_account.deleted&targetId="+sa.ID, tn.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	if !strings.Contains(string(logged.Raw), `"sync bot"`) {
		t.Errorf("no service_account.deleted entry naming the account: %s", logged.Raw)
	}

	var last serviceaccounts.ServiceAccount
	for range serviceaccounts.MaxServiceAccounts {
		last = e.NewServiceAccount(tn, tenancy.RoleStudent).ServiceAccount
	}
	if _, err := e.App.ServiceAccounts.CreateServiceAccount(sa.Ctx, "one too many", tenancy.RoleStudent); !isConflict(err, "SERVICE_ACCOUNT_LIMIT") {
		t.Fatalf("service account %d: %v, want SERVICE_ACCOUNT_LIMIT", serviceaccounts.MaxServiceAccounts+1, err)
	}
	if _, err := e.App.ServiceAccounts.CreateServiceAccount(foreign, "another organization's", tenancy.RoleStudent); err != nil {
		t.Fatalf("another organization is under its own bound: %v", err)
	}
	if err := e.App.ServiceAccounts.DeleteServiceAccount(sa.Ctx, last.ID); err != nil {
		t.Fatal(err)
	}
	e.NewServiceAccount(tn, tenancy.RoleStudent)
}

// TestServiceAccountKeyRacingItsAccountsDeletion adds a key while its
// account's deletion commits: the account is not found, as it would be a
// moment later, rather than a server fault.
func TestServiceAccountKeyRacingItsAccountsDeletion(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	e := apptest.NewAt(t, url)
	sa := e.NewServiceAccount(e.NewTenant("US", "pro"), tenancy.RoleTeacher)
	err := storetest.DeleteDuring(t, url, `DELETE FROM service_accounts WHERE id = $1`, []any{sa.ID}, func() error {
		_, err := e.TryAddKey(sa)
		return err
	})
	if !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("adding a key as its account is deleted: %v, want not found", err)
	}
}

func isConflict(err error, reason string) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == errs.KindConflict && e.Reason == reason
}

func TestServiceAccountJWT(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	jwt := e.ServiceAccountToken(tn, tenancy.RoleTeacher, "users:read exams:read")
	if parts := strings.Split(jwt, "."); len(parts) != 3 {
		t.Fatalf("service account token is not a JWT: %q", jwt)
	}
	list := e.Do("GET", "/users", jwt, nil).Must(t, http.StatusOK)
	if n := len(list.Body["users"].([]any)); n != 4 {
		t.Fatalf("service account sees %d users, want its organization's 4", n)
	}
	e.Do("GET", "/users/"+other.Users[tenancy.RoleOwner].ID, jwt, nil).Must(t, http.StatusNotFound)
	if r := e.Do("GET", "/org", jwt, nil).Must(t, http.StatusForbidden); r.Reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("scope not requested: %s", r.Raw)
	}
	if r := e.Do("GET", "/me", jwt, nil).Must(t, http.StatusForbidden); r.Reason() != "INSUFFICIENT_SCOPE" && r.Reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("GET /me as a service account: %s", r.Raw)
	}
	tampered := jwt[:len(jwt)-4] + "AAAA"
	e.Do("GET", "/users", tampered, nil).Must(t, http.StatusUnauthorized)
}
