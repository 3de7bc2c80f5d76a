package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/ai"
)

func TestBuiltinGrade(t *testing.T) {
	png := ai.File{URL: "https://cdn.example/media/a.png", ContentType: "image/png", Data: []byte("x")}
	for _, tc := range []struct {
		name string
		req  ai.GradeRequest
		want ai.Grade
	}{
		{
			name: "keywords found case-insensitively, phrases included",
			req: ai.GradeRequest{
				Config:   map[string]any{"keywords": []any{"photosynthesis", "chlorophyll", "light energy"}},
				Answer:   "Photosynthesis turns LIGHT energy into sugar.",
				MaxScore: 5,
			},
			want: ai.Grade{Score: 3.33, MaxScore: 5, Feedback: "Missing key terms: chlorophyll.",
				Rationale: "Builtin grader: keywords 2/3; score 0.67 × 5 = 3.33."},
		},
		{
			name: "keywords match whole words only",
			req:  ai.GradeRequest{Config: map[string]any{"keywords": []any{"cat"}}, Answer: "a category", MaxScore: 2},
			want: ai.Grade{Score: 0, MaxScore: 2, Feedback: "Missing key terms: cat.",
				Rationale: "Builtin grader: keywords 0/1; score 0.00 × 2 = 0.00."},
		},
		{
			name: "minimum length",
			req:  ai.GradeRequest{Config: map[string]any{"minWords": 10.0}, Answer: "one two three four five", MaxScore: 4},
			want: ai.Grade{Score: 2, MaxScore: 4, Feedback: "The answer has 5 words; at least 10 are expected.",
				Rationale: "Builtin grader: length 5/10 words; score 0.50 × 4 = 2.00."},
		},
		{
			name: "required files; file URLs in the answer are not words",
			req: ai.GradeRequest{Config: map[string]any{"requiredFiles": 2.0},
				Answer: map[string]any{"files": []any{png.URL}}, Files: []ai.File{png}, MaxScore: 3},
			want: ai.Grade{Score: 1.5, MaxScore: 3, Feedback: "1 of 2 required files attached; 1 missing.",
				Rationale: "Builtin grader: files 1/2; score 0.50 × 3 = 1.50."},
		},
		{
			name: "criteria combined as their mean, Go-typed config",
			req: ai.GradeRequest{
				Config:   map[string]any{"keywords": []string{"alpha", "beta"}, "minWords": 4, "requiredFiles": 1},
				Answer:   map[string]any{"value": "alpha gamma delta", "page": 7.0},
				Files:    []ai.File{png},
				MaxScore: 6,
			},
			want: ai.Grade{Score: 5, MaxScore: 6, Feedback: "Missing key terms: beta.",
				Rationale: "Builtin grader: keywords 1/2; length 4/4 words; files 1/1; score 0.83 × 6 = 5.00."},
		},
		{
			name: "nothing configured: length heuristic",
			req:  ai.GradeRequest{Answer: strings.Repeat("word ", 25), MaxScore: 10},
			want: ai.Grade{Score: 5, MaxScore: 10, Feedback: "The answer has 25 words; at least 50 are expected.",
				Rationale: "Builtin grader: length 25/50 words; score 0.50 × 10 = 5.00."},
		},
		{
			name: "no answer",
			req:  ai.GradeRequest{Answer: nil, MaxScore: 1},
			want: ai.Grade{Score: 0, MaxScore: 1, Feedback: "The answer has 0 words; at least 50 are expected.",
				Rationale: "Builtin grader: length 0/50 words; score 0.00 × 1 = 0.00."},
		},
		{
			name: "every criterion met",
			req:  ai.GradeRequest{Config: map[string]any{"keywords": []any{"Mitochondria"}, "minWords": 2.0}, Answer: "mitochondria produce ATP", MaxScore: 2.5},
			want: ai.Grade{Score: 2.5, MaxScore: 2.5, Feedback: "Well done: the answer meets every criterion.",
				Rationale: "Builtin grader: keywords 1/1; length 3/2 words; score 1.00 × 2.5 = 2.50."},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ai.NewBuiltin()
			got, err := p.Grade(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("grade\n%+v\nwant\n%+v", got, tc.want)
			}
			if again, _ := p.Grade(context.Background(), tc.req); again != got {
				t.Errorf("second grade %+v differs from the first %+v", again, got)
			}
		})
	}
}

func TestBuiltinGradeRejectsNegativeMaxScore(t *testing.T) {
	_, err := ai.NewBuiltin().Grade(context.Background(), ai.GradeRequest{MaxScore: -2})
	if !errors.Is(err, ai.ErrInvalidRequest) {
		t.Fatalf("got %v, want ErrInvalidRequest", err)
	}
}

func TestBuiltinGenerateShapes(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		points float64
		check  func(t *testing.T, c map[string]any)
	}{
		{ai.TypeMultipleChoice, 1, func(t *testing.T, c map[string]any) {
			options, _ := c["options"].([]any)
			correct, _ := c["correct"].([]any)
			if len(options) != 4 || len(correct) != 1 {
				t.Fatalf("options %v correct %v", c["options"], c["correct"])
			}
			for _, o := range options {
				if s, ok := o.(string); !ok || s == "" {
					t.Errorf("option %#v is not a string", o)
				}
			}
			if i, ok := correct[0].(float64); !ok || i < 0 || i > 3 || i != float64(int(i)) {
				t.Errorf("correct index %#v", correct[0])
			}
		}},
		{ai.TypeTrueFalse, 1, func(t *testing.T, c map[string]any) {
			if _, ok := c["correct"].(bool); !ok || len(c) != 1 {
				t.Errorf("config %v", c)
			}
		}},
		{ai.TypeShortText, 1, func(t *testing.T, c map[string]any) {
			accepted, _ := c["accepted"].([]any)
			if len(accepted) == 0 || accepted[0] != "Cell Biology" {
				t.Errorf("accepted %v", c["accepted"])
			}
		}},
		{ai.TypeNumeric, 1, func(t *testing.T, c map[string]any) {
			_, a := c["answer"].(float64)
			_, tol := c["tolerance"].(float64)
			if !a || !tol || len(c) != 2 {
				t.Errorf("config %v", c)
			}
		}},
		{ai.TypeEssay, 5, func(t *testing.T, c map[string]any) {
			rubric, _ := c["rubric"].(string)
			min, _ := c["minWords"].(float64)
			if !strings.Contains(rubric, "Cell Biology") || min <= 0 ||
				!reflect.DeepEqual(c["keywords"], []any{"cell", "biology", "example"}) {
				t.Errorf("config %v", c)
			}
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			qs, err := ai.NewBuiltin().GenerateQuestions(context.Background(), ai.GenerateRequest{
				Subject: "Cell Biology", StudentLevel: "grade 10", QuestionTypes: []string{tc.typ, "drawing"}, Language: "en-GB", Count: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) != 3 {
				t.Fatalf("%d questions, want 3", len(qs))
			}
			for _, q := range qs {
				if q.Type != tc.typ || q.Points != tc.points {
					t.Errorf("type %q points %v, want %q %v", q.Type, q.Points, tc.typ, tc.points)
				}
				if !strings.Contains(q.Prompt, "Cell Biology") || !strings.Contains(q.Prompt, "grade 10") {
					t.Errorf("prompt %q does not name the subject and level", q.Prompt)
				}
				tc.check(t, q.Config)
				assertJSONRoundTrip(t, q.Config)
			}
		})
	}
}

// assertJSONRoundTrip checks that a configuration holds the Go types JSON
// decoding produces, so it compares equal to one read back from storage.
func assertJSONRoundTrip(t *testing.T, c map[string]any) {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("config %#v is not JSON-shaped (round trip %#v)", c, back)
	}
}

func TestBuiltinGenerateDefaultsAndLimits(t *testing.T) {
	p := ai.NewBuiltin()
	ctx := context.Background()

	qs, err := p.GenerateQuestions(ctx, ai.GenerateRequest{Subject: "Chemistry", StudentLevel: "A level"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, q := range qs {
		types = append(types, q.Type)
	}
	if want := []string{"multiple_choice", "true_false", "short_text", "numeric", "essay"}; !reflect.DeepEqual(types, want) {
		t.Errorf("default questions of types %v, want %v", types, want)
	}
	again, _ := p.GenerateQuestions(ctx, ai.GenerateRequest{Subject: "Chemistry", StudentLevel: "A level"})
	if !reflect.DeepEqual(qs, again) {
		t.Error("equal requests generated different questions")
	}

	if qs, err := p.GenerateQuestions(ctx, ai.GenerateRequest{Subject: "x", Count: ai.MaxQuestionCount}); err != nil || len(qs) != ai.MaxQuestionCount {
		t.Errorf("max count: %d questions, %v", len(qs), err)
	}
	for name, req := range map[string]ai.GenerateRequest{
		"too many":      {Subject: "x", Count: ai.MaxQuestionCount + 1},
		"negative":      {Subject: "x", Count: -1},
		"no subject":    {Count: 1},
		"unknown types": {Subject: "x", QuestionTypes: []string{"drawing"}},
	} {
		if _, err := p.GenerateQuestions(ctx, req); !errors.Is(err, ai.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
}

func TestBuiltinGenerateLanguage(t *testing.T) {
	qs, err := ai.NewBuiltin().GenerateQuestions(context.Background(), ai.GenerateRequest{
		Subject: "Geschichte", StudentLevel: "Klasse 9", Language: "de-AT", QuestionTypes: []string{ai.TypeEssay}, Count: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "Frage 1 (Geschichte, Klasse 9): Erklären Sie einen zentralen Gedanken aus Geschichte mit eigenen Worten und geben Sie ein Beispiel."
	if qs[0].Prompt != want {
		t.Errorf("prompt %q, want %q", qs[0].Prompt, want)
	}
}
