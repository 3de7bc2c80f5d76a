package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/platform/errs"
)

func TestMetadataApply(t *testing.T) {
	base := Metadata{"grade": "7", "score": 1.0, "active": true}
	tests := []struct {
		name      string
		patch     MetadataPatch
		want      Metadata
		wantField string
	}{
		{"merge keeps other keys", MetadataPatch{"grade": "8", "team": "red"}, Metadata{"grade": "8", "score": 1.0, "active": true, "team": "red"}, ""},
		{"null removes", MetadataPatch{"score": nil}, Metadata{"grade": "7", "active": true}, ""},
		{"null of absent key is a no-op", MetadataPatch{"nope": nil}, base, ""},
		{"nested object names the key", MetadataPatch{"address": map[string]any{"city": "Oslo"}}, nil, "metadata.address"},
		{"array names the key", MetadataPatch{"tags": []any{"a"}}, nil, "metadata.tags"},
		{"long key", MetadataPatch{strings.Repeat("k", MaxMetadataKeyLen+1): "v"}, nil, "metadata." + strings.Repeat("k", MaxMetadataKeyLen+1)},
		{"long value", MetadataPatch{"bio": strings.Repeat("v", MaxMetadataValueLen+1)}, nil, "metadata.bio"},
		{"empty key", MetadataPatch{"": "v"}, nil, "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.Apply(tt.patch)
			if tt.wantField != "" {
				e, ok := errs.As(err)
				if !ok || e.Kind != errs.KindInvalid || e.Field != tt.wantField {
					t.Fatalf("err = %v, want invalid %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
			if base["score"] != 1.0 {
				t.Fatal("Apply modified its receiver")
			}
		})
	}
}

func TestMetadataKeyLimit(t *testing.T) {
	p := MetadataPatch{}
	for i := range MaxMetadataKeys + 1 {
		p[fmt.Sprintf("key%d", i)] = "v"
	}
	if _, err := (Metadata{}).Apply(p); !errs.Is(err, errs.KindInvalid) {
		t.Fatalf("%d keys: err = %v, want invalid", len(p), err)
	}
}

func TestDefaultAIRegion(t *testing.T) {
	eea := []string{"AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT",
		"LV", "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE", "IS", "LI", "NO"}
	for _, c := range eea {
		if got := DefaultAIRegion(c); got != RegionEU {
			t.Errorf("DefaultAIRegion(%s) = %s, want eu", c, got)
		}
	}
	for _, c := range []string{"US", "CH", "GB", "IN", "BR", "JP", "TR"} {
		if got := DefaultAIRegion(c); got != RegionGlobal {
			t.Errorf("DefaultAIRegion(%s) = %s, want global", c, got)
		}
	}
}

func TestAPIKeysNeverCarryAuditLogWrite(t *testing.T) {
	for _, r := range Roles {
		if slices.Contains(APIKeyScopes(r), ScopeAuditLogsWrite) {
			t.Errorf("API key of %s carries audit-logs:write", r)
		}
	}
	if !slices.Contains(APIKeyScopes(RoleAdmin), ScopeOrgsWrite) || slices.Contains(APIKeyScopes(RoleStudent), ScopeUsersRead) {
		t.Error("API key scopes do not follow the role")
	}
}

func TestAuthorize(t *testing.T) {
	caller := func(k Kind, r Role, scopes ...Scope) context.Context {
		return WithCaller(context.Background(), &Caller{Kind: k, OrgID: "org_x", UserID: "usr_x", Role: r, Scopes: scopes})
	}
	tests := []struct {
		name       string
		ctx        context.Context
		perm       Permission
		wantReason string
	}{
		{"app writes audit log", caller(KindOAuthApp, RoleTeacher, ScopeAuditLogsWrite), WriteAuditLog, ""},
		{"API key cannot write audit log", caller(KindAPIKey, RoleOwner, AllScopes...), WriteAuditLog, "CALLER_KIND_NOT_ALLOWED"},
		{"JWT cannot write audit log", caller(KindJWT, RoleOwner, AllScopes...), WriteAuditLog, "CALLER_KIND_NOT_ALLOWED"},
		{"app without the scope", caller(KindOAuthApp, RoleOwner, ScopeUsersRead), WriteAuditLog, "INSUFFICIENT_SCOPE"},
		{"teacher cannot change org", caller(KindAPIKey, RoleTeacher, ScopeOrgsWrite), WriteOrg, "ROLE_NOT_ALLOWED"},
		{"admin changes org", caller(KindAPIKey, RoleAdmin, ScopeOrgsWrite), WriteOrg, ""},
		{"no caller", context.Background(), ReadOrg, "UNAUTHENTICATED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Authorize(tt.ctx, tt.perm)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("err = %v, want allowed", err)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Reason != tt.wantReason {
				t.Fatalf("err = %v, want reason %s", err, tt.wantReason)
			}
		})
	}
}
