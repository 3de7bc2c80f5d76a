package exchange_test

import (
	"reflect"
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
