package ai

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// builtinTypes are the question types the builtin generator writes, in the
// order it cycles through them.
var builtinTypes = []string{TypeMultipleChoice, TypeTrueFalse, TypeShortText, TypeNumeric, TypeEssay}

// phrasebook holds the template texts of one language. Format arguments:
// %[1]s subject, %[2]s level, %[3]d question number; options take %[2]s as
// the option letter; numeric questions take the operands as %[4]d, %[5]d.
// leadIns are the sentences regeneration puts before a prompt to reword
// it, at least two per register so a new one always differs from the
// current one; indexed by register, so they are read in a fixed order.
type phrasebook struct {
	choice, option, trueFalse, shortText, numeric, essay, rubric, example string
	leadIns                                                               [registers][]string
}

var phrasebooks = map[string]phrasebook{
	"en": {
		choice:    "Question %[3]d (%[1]s, %[2]s): which statement about %[1]s is correct?",
		option:    "Statement %[2]s about %[1]s",
		trueFalse: "Question %[3]d (%[1]s, %[2]s): true or false? Statement %[3]d about %[1]s holds.",
		shortText: "Question %[3]d (%[1]s, %[2]s): what is the subject of this exam?",
		numeric:   "Question %[3]d (%[1]s, %[2]s): how much is %[4]d + %[5]d?",
		essay:     "Question %[3]d (%[1]s, %[2]s): explain a central idea of %[1]s in your own words and give an example.",
		rubric:    "Explains a central idea of %[1]s correctly, uses its key terms and gives a relevant example.",
		example:   "example",
		leadIns: [registers][]string{
			registerPlain:   {"Question:", "Try this one:", "Answer the following:"},
			registerSimpler: {"In simple terms:", "Put simply:"},
			registerYounger: {"Here is a puzzle for you!", "Let's try this one together!"},
			registerHarder:  {"Challenge question:", "Think it through carefully:"},
			registerFormal:  {"Please answer the following question.", "Kindly consider the following."},
		},
	},
	"de": {
		choice:    "Frage %[3]d (%[1]s, %[2]s): Welche Aussage über %[1]s ist richtig?",
		option:    "Aussage %[2]s zu %[1]s",
		trueFalse: "Frage %[3]d (%[1]s, %[2]s): Richtig oder falsch? Aussage %[3]d zu %[1]s trifft zu.",
		shortText: "Frage %[3]d (%[1]s, %[2]s): Wie heißt das Fach dieser Prüfung?",
		numeric:   "Frage %[3]d (%[1]s, %[2]s): Wie viel ist %[4]d + %[5]d?",
		essay:     "Frage %[3]d (%[1]s, %[2]s): Erklären Sie einen zentralen Gedanken aus %[1]s mit eigenen Worten und geben Sie ein Beispiel.",
		rubric:    "Erklärt einen zentralen Gedanken aus %[1]s richtig, verwendet die Fachbegriffe und gibt ein passendes Beispiel.",
		example:   "beispiel",
		leadIns: [registers][]string{
			registerPlain:   {"Frage:", "Versuchen Sie diese:", "Beantworten Sie Folgendes:"},
			registerSimpler: {"Ganz einfach gesagt:", "Kurz gefragt:"},
			registerYounger: {"Hier ist ein Rätsel für dich!", "Probieren wir das zusammen!"},
			registerHarder:  {"Knobelaufgabe:", "Denken Sie gründlich nach:"},
			registerFormal:  {"Bitte beantworten Sie die folgende Frage.", "Bitte bearbeiten Sie Folgendes."},
		},
	},
	"fr": {
		choice:    "Question %[3]d (%[1]s, %[2]s) : quelle affirmation sur %[1]s est correcte ?",
		option:    "Affirmation %[2]s sur %[1]s",
		trueFalse: "Question %[3]d (%[1]s, %[2]s) : vrai ou faux ? L'affirmation %[3]d sur %[1]s est exacte.",
		shortText: "Question %[3]d (%[1]s, %[2]s) : quelle est la matière de cet examen ?",
		numeric:   "Question %[3]d (%[1]s, %[2]s) : combien font %[4]d + %[5]d ?",
		essay:     "Question %[3]d (%[1]s, %[2]s) : expliquez une idée centrale de %[1]s avec vos propres mots et donnez un exemple.",
		rubric:    "Explique correctement une idée centrale de %[1]s, emploie les termes clés et donne un exemple pertinent.",
		example:   "exemple",
		leadIns: [registers][]string{
			registerPlain:   {"Question :", "À vous de jouer :", "Répondez à ce qui suit :"},
			registerSimpler: {"En termes simples :", "Pour faire simple :"},
			registerYounger: {"Voici une devinette pour toi !", "Essayons ensemble !"},
			registerHarder:  {"Question défi :", "Réfléchissez bien :"},
			registerFormal:  {"Veuillez répondre à la question suivante.", "Veuillez examiner ce qui suit."},
		},
	},
}

// phrasebookOf returns the texts of a BCP 47 tag's primary language, if
// there are any.
func phrasebookOf(tag string) (phrasebook, bool) {
	primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
	p, ok := phrasebooks[primary]
	return p, ok
}

// phrasebookFor picks the texts of a BCP 47 tag's primary language,
// English when there are none: a generated question is written whole in
// one language.
func phrasebookFor(tag string) phrasebook {
	if p, ok := phrasebookOf(tag); ok {
		return p
	}
	return phrasebooks["en"]
}

// GenerateQuestions writes req.Count template questions, cycling through
// the requested types the builtin generator knows. Configurations use the
// Go types JSON decoding produces ([]any, float64), as the OpenAI provider's
// do, so callers validate both alike.
func (builtin) GenerateQuestions(_ context.Context, req GenerateRequest) ([]GeneratedQuestion, error) {
	count, err := generateCount(req)
	if err != nil {
		return nil, err
	}
	types := builtinTypes
	if len(req.QuestionTypes) > 0 {
		types = nil
		for _, t := range req.QuestionTypes {
			if slices.Contains(builtinTypes, t) {
				types = append(types, t)
			}
		}
		if len(types) == 0 {
			return nil, invalidf("the builtin generator knows none of the question types %q", req.QuestionTypes)
		}
	}
	p := phrasebookFor(req.Language)
	questions := make([]GeneratedQuestion, count)
	for i := range questions {
		questions[i] = p.question(types[i%len(types)], i+1, req.Subject, req.StudentLevel)
	}
	return questions, nil
}

// question writes question number n of type t. The correct answers vary
// with n so an exam is not all "A" or all "true".
func (p phrasebook) question(t string, n int, subject, level string) GeneratedQuestion {
	text := func(format string, extra ...any) string {
		return fmt.Sprintf(format, append([]any{subject, level, n}, extra...)...)
	}
	switch t {
	case TypeMultipleChoice:
		options := make([]any, 4)
		for i := range options {
			options[i] = fmt.Sprintf(p.option, subject, string(rune('A'+i)))
		}
		return GeneratedQuestion{Type: t, Prompt: text(p.choice), Points: 1,
			Config: map[string]any{"options": options, "correct": []any{float64((n - 1) % 4)}}}
	case TypeTrueFalse:
		return GeneratedQuestion{Type: t, Prompt: text(p.trueFalse), Points: 1,
			Config: map[string]any{"correct": n%2 == 1}}
	case TypeShortText:
		return GeneratedQuestion{Type: t, Prompt: text(p.shortText), Points: 1,
			Config: map[string]any{"accepted": []any{subject}}}
	case TypeNumeric:
		a, b := n+2, 2*n+1
		return GeneratedQuestion{Type: t, Prompt: text(p.numeric, a, b), Points: 1,
			Config: map[string]any{"answer": float64(a + b), "tolerance": float64(0)}}
	default: // TypeEssay
		return GeneratedQuestion{Type: t, Prompt: text(p.essay), Points: 5,
			Config: map[string]any{"rubric": text(p.rubric), "keywords": essayKeywords(subject, p.example), "minWords": float64(80)}}
	}
}

// essayKeywords are the subject's longer words plus the language's word for
// "example", which the prompt asks for.
func essayKeywords(subject, example string) []any {
	var kws []any
	for _, w := range wordsOf(subject) {
		if len([]rune(w)) >= 4 && len(kws) < 3 && !slices.Contains(kws, any(w)) {
			kws = append(kws, w)
		}
	}
	return append(kws, example)
}
