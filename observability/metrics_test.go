package observability

import (
	"fmt"
	"testing"
)

func TestOrgLabelCardinalityIsBounded(t *testing.T) {
	var l OrgLabeler
	for i := range MaxOrgLabels {
		if got := l.Label(fmt.Sprintf("org_%d", i)); got != fmt.Sprintf("org_%d", i) {
			t.Fatalf("org %d labelled %q", i, got)
		}
	}
	if got := l.Label("org_new"); got != OverflowOrg {
		t.Fatalf("org past the limit labelled %q, want %q", got, OverflowOrg)
	}
	if got := l.Label("org_7"); got != "org_7" {
		t.Fatalf("known org labelled %q after overflow", got)
	}
	if got := l.Label(""); got != NoOrg {
		t.Fatalf("no org labelled %q", got)
	}
}
