package app_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/assessd/assessd/api"
	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

var pathVariable = regexp.MustCompile(`\{[^}]+\}`)

// TestEveryMethodDocumentsItsAccess checks the access rule each method
// documents (the assessd.v1.access option, which the OpenAPI description
// publishes) against what the server enforces: a token without the scope
// is refused with 403 naming exactly that scope.
func TestEveryMethodDocumentsItsAccess(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleOwner, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid"} // a token with no API scope
	token := e.Token(a).AccessToken

	methods := 0
	protoregistry.GlobalFiles.RangeFilesByPackage(v1.File_assessd_v1_users_proto.Package(), func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			ms := f.Services().Get(i).Methods()
			for j := range ms.Len() {
				m := ms.Get(j)
				rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				methods++
				access, _ := proto.GetExtension(m.Options(), v1.E_Access).(*v1.Access)
				if access == nil || access.Scope == "" {
					t.Errorf("%s has no assessd.v1.access option", m.FullName())
					continue
				}
				method, path := api.HTTPPattern(rule)
				var body any
				if rule.Body != "" {
					body = "{}"
				}
				r := e.Do(method, pathVariable.ReplaceAllString(path, "x_01ARZ3NDEKTSV4RRFFQ69G5FAV"), token, body)
				if r.Status != http.StatusForbidden || !strings.Contains(r.Header.Get("WWW-Authenticate"), `scope="`+access.Scope+`"`) {
					t.Errorf("%s %s without %s: %d, WWW-Authenticate %q", method, path, access.Scope, r.Status, r.Header.Get("WWW-Authenticate"))
				}
			}
		}
		return true
	})
	if methods < 11 {
		t.Fatalf("checked %d methods", methods)
	}
}
