package lti

import (
	"testing"

	"github.com/assessd/assessd/tenancy"
)

func TestRolesMapToTheRoleALaunchActsIn(t *testing.T) {
	const m, inst = "http://purl.imsglobal.org/vocab/lis/v2/membership", "http://purl.imsglobal.org/vocab/lis/v2/institution/person"
	for _, tc := range []struct {
		roles []string
		want  tenancy.Role
	}{
		{[]string{m + "#Learner"}, tenancy.RoleStudent},
		{[]string{m + "#Instructor"}, tenancy.RoleTeacher},
		{[]string{m + "/Instructor#TeachingAssistant"}, tenancy.RoleTeacher},
		{[]string{m + "/Learner#NonCreditLearner"}, tenancy.RoleStudent},
		{[]string{m + "#ContentDeveloper"}, tenancy.RoleTeacher},
		{[]string{m + "#Administrator", m + "#Learner"}, tenancy.RoleTeacher},
		{[]string{m + "#Learner", m + "#Instructor"}, tenancy.RoleTeacher},
		{[]string{"Learner"}, tenancy.RoleStudent}, // a context role's simple name
		{[]string{"Instructor"}, tenancy.RoleTeacher},
		{[]string{m + "#Mentor"}, ""},
		{[]string{inst + "#Student"}, tenancy.RoleStudent},
		{[]string{inst + "#Faculty"}, tenancy.RoleTeacher},
		// A context role decides over the institution's.
		{[]string{inst + "#Faculty", m + "#Learner"}, tenancy.RoleStudent},
		{[]string{"http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"}, ""},
		{nil, ""},
	} {
		if got := roleOf(tc.roles); got != tc.want {
			t.Errorf("roleOf(%v) = %q, want %q", tc.roles, got, tc.want)
		}
	}
}
