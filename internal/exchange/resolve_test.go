package exchange_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/exchange"
)

func TestResolveTypes(t *testing.T) {
	p := sampleDocument().Plan() // lab_report (AI graded) and year_guess (deprecated)
	same := essayType
	same.ID = "qtp_MINE"
	changed := deprecatedType
	changed.ID, changed.Condition = "qtp_OTHER", "=true"
	cases := []struct {
		name      string
		available []assessment.TypeDef
		want      []exchange.TypeAction
	}{
		{"new organization", nil, []exchange.TypeAction{
			{Ref: essayType.ID, Create: true, Key: "lab_report"},
			{Ref: deprecatedType.ID, Create: true, Key: "year_guess", DeprecateAfter: true}}},
		{"identical type reused, different one under the same key copied", []assessment.TypeDef{same, changed}, []exchange.TypeAction{
			{Ref: essayType.ID, Use: "qtp_MINE"},
			{Ref: deprecatedType.ID, Create: true, Key: "year_guess_2", DeprecateAfter: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := exchange.ResolveTypes(p, tc.available); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestResolveTypesRenaming: a key the organization owns is renamed to the
// first free key_2, key_3, ..., its base cut to 60 characters; a plan of
// 200,000 types of one key renames them in linear time (quadratic, it
// took minutes: decision 0163).
func TestResolveTypesRenaming(t *testing.T) {
	long := strings.Repeat("k", 63)
	owned := []assessment.TypeDef{{ID: "qtp_1", Key: "a", Owned: true}, {ID: "qtp_2", Key: "a_3", Owned: true},
		{ID: "qtp_3", Key: long, Owned: true}}
	var p exchange.Plan
	for _, k := range []string{"a", "a", "a_2", "a", long, long, "b", "b"} {
		p.Types = append(p.Types, exchange.TypeSpec{Ref: k, Key: k})
	}
	var got []string
	for _, a := range exchange.ResolveTypes(p, owned) {
		got = append(got, a.Key)
	}
	want := []string{"a_2", "a_4", "a_2_2", "a_5", long[:60] + "_2", long[:60] + "_3", "b", "b_2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys %q\nwant %q", got, want)
	}

	p.Types = slices.Repeat([]exchange.TypeSpec{{Key: "lab_report"}}, 200_000)
	for i, a := range exchange.ResolveTypes(p, nil) {
		want := "lab_report"
		if i > 0 {
			want = fmt.Sprintf("lab_report_%d", i+1)
		}
		if a.Key != want {
			t.Fatalf("type %d: key %q, want %q", i, a.Key, want)
		}
	}
}
