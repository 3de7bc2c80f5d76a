package exchange

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/assessd/assessd/internal/assessment"
)

// option is one option of a choice question's config.
type option struct {
	id, text, feedback string
	correct            bool
}

func options(config map[string]any) []option {
	raw, _ := config["options"].([]any)
	out := make([]option, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		o := option{}
		o.id, _ = m["id"].(string)
		o.text, _ = m["text"].(string)
		o.feedback, _ = m["feedback"].(string)
		o.correct, _ = m["correct"].(bool)
		out = append(out, o)
	}
	return out
}

func configString(config map[string]any, key string) string {
	s, _ := config[key].(string)
	return s
}

func configBool(config map[string]any, key string) bool {
	b, _ := config[key].(bool)
	return b
}

func configFloat(config map[string]any, key string) float64 {
	f, _ := config[key].(float64)
	return f
}

// itemParts are the pieces every mapping fills; itemXML assembles them in
// the order the QTI schema requires.
type itemParts struct {
	response   *elem   // qti-response-declaration
	outcomes   []*elem // outcome declarations beyond SCORE and MAXSCORE
	body       []*elem // item body content after the prompt
	processing []*elem // response rules; none: scored by a person or AI
}

// itemFor maps one question to its QTI item parts by type. Unknown and
// custom types travel as extended text (their configuration goes in the
// item's side file).
func itemFor(q DocQuestion) itemParts {
	switch q.Type {
	case assessment.TypeMultipleChoice:
		return choiceItem(q.Config, false)
	case assessment.TypeMultipleSelect:
		return choiceItem(q.Config, true)
	case assessment.TypeTrueFalse:
		return trueFalseItem(q.Config)
	case assessment.TypeShortText:
		return shortTextItem(q.Config)
	case assessment.TypeNumeric:
		return numericItem(q.Config)
	case assessment.TypeEssay:
		return essayItem(q.Config)
	case assessment.TypeFileUpload:
		return fileUploadItem(q.Config)
	default:
		return customItem(q.Config)
	}
}

func responseDecl(cardinality, baseType string, correct ...string) *elem {
	d := el("qti-response-declaration", "identifier", responseID, "cardinality", cardinality, "base-type", baseType)
	if len(correct) > 0 {
		cr := el("qti-correct-response")
		for _, c := range correct {
			cr.add(el("qti-value").withText(c))
		}
		d.add(cr)
	}
	return d
}

func outcomeDecl(id, cardinality, baseType, def string) *elem {
	d := el("qti-outcome-declaration", "identifier", id, "cardinality", cardinality, "base-type", baseType)
	if def != "" {
		d.add(el("qti-default-value").add(el("qti-value").withText(def)))
	}
	return d
}

func variable(id string) *elem { return el("qti-variable", "identifier", id) }

// fullScoreIf sets SCORE to MAXSCORE when cond holds; SCORE's default is
// 0, so assessd's all-or-nothing rule needs no else branch.
func fullScoreIf(cond *elem) *elem {
	return el("qti-response-condition").add(el("qti-response-if").add(cond,
		el("qti-set-outcome-value", "identifier", scoreID).add(variable(maxScoreID))))
}

// choiceItem maps multiple choice (any option marked correct earns the
// points, as the condition's "in" does) and multiple select (exactly the
// correct set). Option feedback becomes inline feedback shown for the
// chosen options.
func choiceItem(config map[string]any, multiple bool) itemParts {
	opts := options(config)
	var correct []string
	maxChoices := "1"
	if multiple {
		maxChoices = "0" // no limit
	}
	interaction := el("qti-choice-interaction", "response-identifier", responseID,
		"shuffle", fmt.Sprint(configBool(config, "shuffle")), "max-choices", maxChoices)
	hasFeedback := false
	for _, o := range opts {
		id := choiceIdentifier(o.id)
		if o.correct {
			correct = append(correct, id)
		}
		choice := el("qti-simple-choice", "identifier", id).withText(o.text)
		if o.feedback != "" {
			hasFeedback = true
			choice.add(el("qti-feedback-inline", "outcome-identifier", feedbackID, "identifier", id, "show-hide", "show").withText(o.feedback))
		}
		interaction.add(choice)
	}
	p := itemParts{body: []*elem{interaction}}
	cardinality := "single"
	if multiple {
		cardinality = "multiple"
		p.response = responseDecl(cardinality, "identifier", correct...)
		if len(correct) == 0 {
			// The condition accepts exactly the empty selection, which a
			// QTI response reports as NULL.
			p.processing = append(p.processing, fullScoreIf(el("qti-is-null").add(variable(responseID))))
		} else {
			p.processing = append(p.processing, fullScoreIf(el("qti-match").add(variable(responseID), el("qti-correct", "identifier", responseID))))
		}
	} else {
		// A single response has one correct value; further correct options
		// are listed in the mapping and accepted by the rule.
		p.response = responseDecl(cardinality, "identifier", correct[:min(1, len(correct))]...)
		if len(correct) > 1 {
			mapping := el("qti-mapping", "default-value", "0", "lower-bound", "0", "upper-bound", "1")
			for _, c := range correct {
				mapping.add(el("qti-map-entry", "map-key", c, "mapped-value", "1", "case-sensitive", "true"))
			}
			p.response.add(mapping)
		}
		if len(correct) > 0 {
			or := el("qti-or")
			for _, c := range correct {
				or.add(el("qti-match").add(variable(responseID), el("qti-base-value", "base-type", "identifier").withText(c)))
			}
			p.processing = append(p.processing, fullScoreIf(or))
		}
	}
	if hasFeedback {
		p.outcomes = append(p.outcomes, outcomeDecl(feedbackID, cardinality, "identifier", ""))
		p.processing = append(p.processing, el("qti-set-outcome-value", "identifier", feedbackID).add(variable(responseID)))
	}
	return p
}

// trueFalseItem is a two-choice interaction whose identifiers are the
// boolean answer values.
func trueFalseItem(config map[string]any) itemParts {
	correct := falseID
	if configBool(config, "correct") {
		correct = trueID
	}
	return itemParts{
		response: responseDecl("single", "identifier", correct),
		body: []*elem{el("qti-choice-interaction", "response-identifier", responseID, "shuffle", "false", "max-choices", "1").add(
			el("qti-simple-choice", "identifier", trueID).withText("True"),
			el("qti-simple-choice", "identifier", falseID).withText("False"))},
		processing: []*elem{fullScoreIf(el("qti-match").add(variable(responseID), el("qti-correct", "identifier", responseID)))},
	}
}

// shortTextItem accepts each answer through a pattern that reproduces the
// condition exactly: surrounding whitespace ignored, inner runs of
// whitespace equal to one space, letters in either case unless
// caseSensitive. The mapping lists the accepted answers for tools that
// read keys rather than rules.
func shortTextItem(config map[string]any) itemParts {
	accepted, _ := config["acceptedAnswers"].([]any)
	caseSensitive := configBool(config, "caseSensitive")
	var first []string
	mapping := el("qti-mapping", "default-value", "0", "lower-bound", "0", "upper-bound", "1")
	or := el("qti-or")
	for _, a := range accepted {
		s, _ := a.(string)
		if first == nil {
			first = []string{s}
		}
		mapping.add(el("qti-map-entry", "map-key", s, "mapped-value", "1", "case-sensitive", fmt.Sprint(caseSensitive)))
		or.add(answerMatch(answerPattern(s, caseSensitive)))
	}
	p := itemParts{response: responseDecl("single", "string", first...).add(mapping),
		body: []*elem{el("p").add(el("qti-text-entry-interaction", "response-identifier", responseID))}}
	if len(accepted) > 0 {
		p.processing = []*elem{fullScoreIf(or)}
	}
	return p
}

// answerMatch is true when the response is the answer that core matches,
// give or take surrounding whitespace. QTI patterns are XML Schema regular
// expressions, which match the whole string, but some players (Citolab's
// qti-components among them) search for them anywhere in the response,
// where "Albanyx" would contain "Albany". The two guards refuse a response
// with anything but whitespace before or after the answer; they never hold
// for a whole-string match, so conforming players score the same with or
// without them, and searching players score like assessd.
func answerMatch(core string) *elem {
	pattern := func(p string) *elem { return el("qti-pattern-match", "pattern", p).add(variable(responseID)) }
	return el("qti-and").add(
		pattern(`\s*`+core+`\s*`),
		el("qti-not").add(pattern(`.*\S\s*`+core+`.*`)),
		el("qti-not").add(pattern(`.*`+core+`\s*\S.*`)))
}

// answerPattern is an XML Schema regular expression matching the words of
// answer separated by runs of whitespace, letters in either case unless
// caseSensitive: what $trim and $lowercase make equal to answer, once
// answerMatch allows the surrounding whitespace.
func answerPattern(answer string, caseSensitive bool) string {
	words := strings.FieldsFunc(answer, qtiWhitespace)
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteString(`\s+`)
		}
		for _, r := range w {
			variants := []rune{r}
			if !caseSensitive {
				for _, v := range []rune{unicode.ToLower(r), unicode.ToUpper(r), unicode.ToTitle(r)} {
					if !strings.ContainsRune(string(variants), v) {
						variants = append(variants, v)
					}
				}
			}
			if len(variants) == 1 {
				b.WriteString(regexEscape(r, false))
				continue
			}
			b.WriteByte('[')
			for _, v := range variants {
				b.WriteString(regexEscape(v, true))
			}
			b.WriteByte(']')
		}
	}
	return b.String()
}

// regexEscape escapes a metacharacter of XML Schema regular expressions.
// "$" goes in a class: it is literal in XML Schema but an anchor to the
// JavaScript engines many QTI players use.
func regexEscape(r rune, inClass bool) string {
	switch {
	case strings.ContainsRune(`\|.-^?*+{}()[]`, r):
		return `\` + string(r)
	case r == '$' && !inClass:
		return "[$]"
	}
	return string(r)
}

// numericItem accepts a float response within the absolute tolerance of
// the correct value (plus assessd's float slack), as a range check: many
// players do not implement qti-equal's tolerance modes. The unit is shown
// after the entry field.
func numericItem(config map[string]any) itemParts {
	entry := el("p").add(el("qti-text-entry-interaction", "response-identifier", responseID))
	if unit := configString(config, "unit"); unit != "" {
		entry.add(textNode(" "), el("span", "class", unitClass).withText(unit))
	}
	correct := configFloat(config, "correct")
	slack := configFloat(config, "tolerance") + numericEpsilon
	bound := func(op string, v float64) *elem {
		return el(op).add(variable(responseID), el("qti-base-value", "base-type", "float").withText(formatFloat(v)))
	}
	return itemParts{
		response:   responseDecl("single", "float", formatFloat(correct)),
		body:       []*elem{entry},
		processing: []*elem{fullScoreIf(el("qti-and").add(bound("qti-gte", correct-slack), bound("qti-lte", correct+slack)))},
	}
}

// essayItem is extended text scored by a person or AI; the rubric is shown
// to scorers.
func essayItem(config map[string]any) itemParts {
	return itemParts{response: responseDecl("single", "string"),
		body: []*elem{el("qti-extended-text-interaction", "response-identifier", responseID), rubricBlock(config)}}
}

// fileUploadItem is an upload interaction with the instructions shown to
// candidates and the rubric to scorers.
func fileUploadItem(config map[string]any) itemParts {
	p := itemParts{response: responseDecl("single", "file")}
	if s := configString(config, "instructions"); s != "" {
		p.body = append(p.body, paragraphs(el("div", "class", instructsClass), s))
	}
	p.body = append(p.body, el("qti-upload-interaction", "response-identifier", responseID), rubricBlock(config))
	return p
}

// customItem is extended text: no standard interaction knows a custom
// type's answer shape or rule. Its rubric, if the config has one, is shown
// to scorers; everything else travels in the side file.
func customItem(config map[string]any) itemParts {
	p := essayItem(config)
	p.body[0].attrs = append(p.body[0].attrs, "class", customClass)
	return p
}

func rubricBlock(config map[string]any) *elem {
	rubric := configString(config, "rubric")
	if rubric == "" {
		return nil
	}
	return el("qti-rubric-block", "use", "scoring", "view", "scorer").add(paragraphs(el("qti-content-body"), rubric))
}

// paragraphs puts each line of s in a paragraph of parent; joining the
// paragraphs' text with newlines gives s back.
func paragraphs(parent *elem, s string) *elem {
	for _, line := range strings.Split(s, "\n") {
		parent.add(el("p").withText(line))
	}
	return parent
}

// itemXML assembles an item: declarations, body (prompt first), then
// response processing.
func itemXML(identifier, title, lang string, q DocQuestion, p itemParts) *elem {
	root := el("qti-assessment-item", "xmlns", nsQTI3, "xmlns:xsi", nsXSI,
		"xsi:schemaLocation", nsQTI3+" "+schemaQTI3, "identifier", identifier, "title", title,
		"adaptive", "false", "time-dependent", "false", "xml:lang", lang, "tool-name", toolName, "tool-version", toolVersion)
	root.add(p.response,
		outcomeDecl(scoreID, "single", "float", "0"),
		outcomeDecl(maxScoreID, "single", "float", formatFloat(q.Points)))
	root.add(p.outcomes...)
	body := el("qti-item-body").add(paragraphs(el("div", "class", promptClass), q.Prompt))
	root.add(body.add(p.body...))
	if len(p.processing) > 0 {
		root.add(el("qti-response-processing").add(p.processing...))
	}
	return root
}
