package assessment_test

import (
	"testing"

	"github.com/assessd/assessd/internal/assessment"
)

// TestProposalUnchanged compares a proposal with its question as stored:
// number notation does not count, option order and points do.
func TestProposalUnchanged(t *testing.T) {
	options := func(ids ...string) []any {
		var out []any
		for _, id := range ids {
			out = append(out, map[string]any{"id": id, "text": "option " + id})
		}
		return out
	}
	qu := assessment.Question{Type: assessment.TypeMultipleChoice, Prompt: "Pick one.", Points: 2,
		Config: map[string]any{"options": options("a", "b"), "weight": 7.0}}
	for _, c := range []struct {
		name string
		p    assessment.Proposal
		want bool
	}{
		{"the same content, 7 for 7.0", assessment.Proposal{Prompt: "Pick one.", Points: 2, Config: map[string]any{"weight": 7, "options": options("a", "b")}}, true},
		{"options reordered", assessment.Proposal{Prompt: "Pick one.", Points: 2, Config: map[string]any{"weight": 7.0, "options": options("b", "a")}}, false},
		{"other points", assessment.Proposal{Prompt: "Pick one.", Points: 3, Config: qu.Config}, false},
		{"another prompt", assessment.Proposal{Prompt: "Choose one.", Points: 2, Config: qu.Config}, false},
	} {
		if got := c.p.Unchanged(qu); got != c.want {
			t.Errorf("%s: Unchanged %v, want %v", c.name, got, c.want)
		}
	}
}
