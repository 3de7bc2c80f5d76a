package exchange

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/errs"
)

// defaultLanguage is the exam language when a package names none.
const defaultLanguage = "en"

// readPackage turns a QTI 3.0 or 2.1 content package into a Plan: items in
// the order of the package's test (then any the test does not list, in
// manifest order); the package side file, when assessd wrote one, restores
// what QTI has no place for.
func readPackage(a *archive) (Plan, error) {
	if !a.has(manifestName) {
		return Plan{}, malformed("the package has no %s at its root", manifestName)
	}
	b, err := a.read(manifestName)
	if err != nil {
		return Plan{}, err
	}
	manifest, err := parseXML(manifestName, b)
	if err != nil {
		return Plan{}, err
	}
	if manifest.name != "manifest" {
		return Plan{}, malformed("%s is not an IMS content package manifest", manifestName)
	}
	p := Plan{}
	if err := readPackageSide(a, &p); err != nil {
		return Plan{}, err
	}
	var hrefs []string
	listed := map[string]bool{}
	addItem := func(name string) {
		if !listed[name] {
			listed[name] = true
			hrefs = append(hrefs, name)
		}
	}
	var itemResources []string
	for _, r := range manifest.findAll(func(n *node) bool { return n.name == "resource" }) {
		href, ok, err := resolve(manifestName, r.attrs["href"])
		if err != nil {
			return Plan{}, err
		}
		typ := r.attrs["type"]
		switch {
		case !ok:
		case strings.HasPrefix(typ, "imsqti_test_xml"):
			if err := readTest(a, href, &p, addItem); err != nil {
				return Plan{}, err
			}
		case strings.HasPrefix(typ, "imsqti_item_xml"):
			itemResources = append(itemResources, href)
		}
	}
	for _, h := range itemResources {
		addItem(h)
	}
	if len(hrefs) == 0 {
		return Plan{}, malformed("the package lists no QTI items")
	}
	defined := p.typeRefs()
	for _, h := range hrefs {
		if err := readItem(a, h, &p, defined); err != nil {
			return Plan{}, err
		}
	}
	if p.Exam.Name == "" {
		p.Exam.Name = "Imported exam"
	}
	if p.Exam.Language == "" {
		p.Exam.Language = defaultLanguage
	}
	return p, nil
}

// readPackageSide restores the exam and custom type definitions from
// assessd's package side file, if the package has one.
func readPackageSide(a *archive, p *Plan) error {
	if !a.has(packageSideName) {
		return nil
	}
	b, err := a.read(packageSideName)
	if err != nil {
		return err
	}
	// Count the types before decoding them (empty structs cost nothing
	// each): a 4 MiB side file holds over a million.
	var count struct {
		QuestionTypes []struct{} `json:"questionTypes"`
	}
	_ = json.Unmarshal(b, &count) // what does not decode is ignored below
	if n := len(count.QuestionTypes); n > maxQuestionTypes {
		return malformed("%s holds %d question types; a package holds at most %d", packageSideName, n, maxQuestionTypes)
	}
	var side packageSide
	if json.Unmarshal(b, &side) != nil || side.Schema != packageSchema {
		p.warn(packageSideName, "ignored: not an %s file", packageSchema)
		return nil
	}
	doc := Document{Exam: side.Exam, QuestionTypes: side.QuestionTypes}.Plan()
	p.Exam, p.Types = doc.Exam, doc.Types
	return nil
}

// readTest takes the exam's title and time limit (unless the side file
// gave them) and the item order from a test.
func readTest(a *archive, href string, p *Plan, addItem func(string)) error {
	if !a.has(href) {
		p.warn(href, "the test listed in the manifest is not in the package; items follow the manifest's order")
		return nil
	}
	b, err := a.read(href)
	if err != nil {
		return err
	}
	test, err := parseXML(href, b)
	if err != nil {
		return err
	}
	if p.Exam.Name == "" {
		p.Exam.Name = strings.TrimSpace(test.attrs["title"])
		if tl := test.find("qti-time-limits"); tl != nil {
			if s, err := strconv.ParseFloat(tl.attrs["max-time"], 64); err == nil && s > 0 && s <= 24*3600 {
				p.Exam.DurationMinutes = int(math.Ceil(s / 60))
			}
		}
	}
	for _, ref := range test.findAll(func(n *node) bool { return n.name == "qti-assessment-item-ref" }) {
		name, ok, err := resolve(href, ref.attrs["href"])
		if err != nil {
			return err
		}
		if ok {
			addItem(name)
		}
	}
	return nil
}

// readItem adds the item's question to p, or a warning saying why it is
// left out; defined holds the Refs of p's types. Only hostile content (a
// DTD, an oversized entry, a path out of the package) fails the whole
// import.
func readItem(a *archive, href string, p *Plan, defined map[string]bool) error {
	if !a.has(href) {
		p.warn(href, "left out: the item is listed but not in the package")
		return nil
	}
	b, err := a.read(href)
	if err != nil {
		return err
	}
	root, err := parseXML(href, b)
	if e, ok := errs.As(err); ok && e.Reason == ReasonMalformed {
		p.warn(href, "left out: the item is not well-formed XML")
		return nil
	}
	if err != nil {
		return err
	}
	if root.name != "qti-assessment-item" {
		p.warn(href, "left out: not a QTI assessment item")
		return nil
	}
	item := root.attrs["identifier"]
	if item == "" {
		item = href
	}
	if p.Exam.Language == "" {
		p.Exam.Language = strings.TrimSpace(root.attrs["xml:lang"])
	}
	own := root.attrs["tool-name"] == toolName
	q, notes, qerr := questionFromItem(root, own)
	q.SourceID = item
	if own {
		side, ok, err := readItemSide(a, href)
		if err != nil {
			return err
		}
		if !ok && classed(root, customClass) != nil {
			notes = append(notes, "imported as an essay: the assessd side file with its custom question type is missing")
		}
		if ok {
			digest := sha256.Sum256(b)
			matches := side.ItemSHA256 == hex.EncodeToString(digest[:])
			switch {
			case matches || !isBuiltin(side.Type):
				if !matches {
					notes = append(notes, "the item was changed after assessd exported it; its assessd configuration was used")
				}
				q.Type, q.Config, q.Revision, qerr = side.Type, side.Config, side.Revision, nil
			default:
				notes = append(notes, "the item was changed after assessd exported it; it was imported from its QTI content")
			}
		}
	}
	for _, n := range notes {
		p.warn(item, "%s", n)
	}
	if qerr != nil {
		p.warn(item, "left out: %s", qerr.Error())
		return nil
	}
	if !isBuiltin(q.Type) && !defined[q.Type] {
		p.warn(item, "left out: its question type %q is not defined in the package", truncate(q.Type, 64))
		return nil
	}
	if q.Revision < 1 {
		q.Revision = currentRevision
	}
	p.Questions = append(p.Questions, q)
	return nil
}

func readItemSide(a *archive, href string) (itemSide, bool, error) {
	name := strings.TrimSuffix(href, ".xml") + itemSideSuffix
	if !a.has(name) {
		return itemSide{}, false, nil
	}
	b, err := a.read(name)
	if err != nil {
		return itemSide{}, false, err
	}
	var side itemSide
	if json.Unmarshal(b, &side) != nil || side.Schema != itemSideSchema || side.Type == "" {
		return itemSide{}, false, nil
	}
	return side, true, nil
}

// itemError says why an item cannot become a question.
type itemError string

func (e itemError) Error() string { return string(e) }

// questionFromItem maps an item's single interaction to the built-in type
// that scores it the same way. Notes describe what was approximated.
func questionFromItem(root *node, own bool) (QuestionSpec, []string, error) {
	body := root.child("qti-item-body")
	if body == nil {
		return QuestionSpec{}, nil, itemError("the item has no body")
	}
	interactions := body.findAll(func(n *node) bool { return strings.HasSuffix(n.name, "-interaction") })
	switch len(interactions) {
	case 0:
		return QuestionSpec{}, nil, itemError("the item has no interaction")
	case 1:
	default:
		return QuestionSpec{}, nil, itemError(fmt.Sprintf("the item has %d interactions; an assessd question has one", len(interactions)))
	}
	in := interactions[0]
	decl := responseDeclaration(root, in.attrs["response-identifier"])
	if decl == nil {
		return QuestionSpec{}, nil, itemError("the interaction has no response declaration")
	}
	q := QuestionSpec{Prompt: promptOf(body, in, own), Revision: currentRevision}
	var notes []string
	q.Points, notes = itemPoints(root)
	var err error
	switch in.name {
	case "qti-choice-interaction", "qti-inline-choice-interaction":
		q.Type, q.Config, err = choiceQuestion(in, decl, own)
	case "qti-text-entry-interaction":
		var more []string
		q.Type, q.Config, more, err = textEntryQuestion(root, body, decl, own)
		notes = append(notes, more...)
	case "qti-extended-text-interaction":
		q.Type, q.Config = assessment.TypeEssay, withRubric(map[string]any{}, body, own)
	case "qti-upload-interaction":
		q.Type, q.Config = assessment.TypeFileUpload, withRubric(map[string]any{}, body, own)
		if div := classed(body, instructsClass); div != nil {
			q.Config["instructions"] = paragraphText(div, own)
		}
	default:
		err = itemError(fmt.Sprintf("the %s has no matching assessd question type", in.name))
	}
	return q, notes, err
}

func responseDeclaration(root *node, id string) *node {
	for _, d := range root.children("qti-response-declaration") {
		if d.attrs["identifier"] == id {
			return d
		}
	}
	return nil
}

// itemPoints is MAXSCORE's default value; items without one are worth 1.
func itemPoints(root *node) (float64, []string) {
	for _, d := range root.children("qti-outcome-declaration") {
		if d.attrs["identifier"] != maxScoreID {
			continue
		}
		if v := d.find("qti-value"); v != nil {
			f, err := strconv.ParseFloat(strings.TrimSpace(v.textContent()), 64)
			if err == nil && f > 0 && f <= 1000 {
				return f, nil
			}
			return 1, []string{"its MAXSCORE is not between 0 and 1000; it is worth 1 point"}
		}
	}
	return 1, nil
}

func correctValues(decl *node) []string {
	var out []string
	if cr := decl.child("qti-correct-response"); cr != nil {
		for _, v := range cr.children("qti-value") {
			out = append(out, v.textContent())
		}
	}
	return out
}

type mapEntry struct {
	key           string
	value         float64
	caseSensitive bool
}

func mappingEntries(decl *node) []mapEntry {
	m := decl.child("qti-mapping")
	if m == nil {
		return nil
	}
	var out []mapEntry
	for _, e := range m.children("qti-map-entry") {
		v, _ := strconv.ParseFloat(e.attrs["mapped-value"], 64)
		out = append(out, mapEntry{key: e.attrs["map-key"], value: v, caseSensitive: e.attrs["case-sensitive"] == "true"})
	}
	return out
}

// choiceQuestion maps a choice interaction: true/false when its two
// choices are the boolean values, else single or multiple answer by the
// response's cardinality.
func choiceQuestion(in, decl *node, own bool) (string, map[string]any, error) {
	choices := in.findAll(func(n *node) bool { return n.name == "qti-simple-choice" || n.name == "qti-inline-choice" })
	correct := map[string]bool{}
	for _, c := range correctValues(decl) {
		correct[strings.TrimSpace(c)] = true
	}
	single := decl.attrs["cardinality"] == "single"
	if single {
		for _, e := range mappingEntries(decl) {
			if e.value > 0 {
				correct[e.key] = true
			}
		}
	}
	if single && len(choices) == 2 && choices[0].attrs["identifier"] == trueID && choices[1].attrs["identifier"] == falseID {
		return assessment.TypeTrueFalse, map[string]any{"correct": correct[trueID]}, nil
	}
	if len(choices) < 2 {
		return "", nil, itemError("the choice interaction has fewer than two choices")
	}
	opts := make([]any, 0, len(choices))
	for _, c := range choices {
		id := c.attrs["identifier"]
		o := map[string]any{"id": optionID(id), "text": choiceText(c, own)}
		if o["text"] == "" {
			return "", nil, itemError(fmt.Sprintf("the choice %s has no text (only text choices can be imported)", truncate(id, 64)))
		}
		if correct[id] {
			o["correct"] = true
		}
		if fb := c.find("qti-feedback-inline"); fb != nil {
			o["feedback"] = fb.textContent()
		}
		opts = append(opts, o)
	}
	config := map[string]any{"options": opts}
	if in.attrs["shuffle"] == "true" {
		config["shuffle"] = true
	}
	if single {
		return assessment.TypeMultipleChoice, config, nil
	}
	return assessment.TypeMultipleSelect, config, nil
}

// choiceText is a choice's own text, without its inline feedback; other
// tools' markup is reduced to its words.
func choiceText(c *node, own bool) string {
	var b strings.Builder
	for _, k := range c.kids {
		if k.name != "qti-feedback-inline" {
			b.WriteString(k.textContent())
		}
	}
	if own {
		return b.String()
	}
	return collapse(b.String())
}

// textEntryQuestion maps a text entry: numeric for a float or integer
// response, short text for a string one.
func textEntryQuestion(root, body, decl *node, own bool) (string, map[string]any, []string, error) {
	values := correctValues(decl)
	switch decl.attrs["base-type"] {
	case "float", "integer":
		if len(values) == 0 {
			return "", nil, nil, itemError("the numeric entry has no correct response")
		}
		correct, err := strconv.ParseFloat(strings.TrimSpace(values[0]), 64)
		if err != nil {
			return "", nil, nil, itemError("the numeric entry's correct response is not a number")
		}
		config := map[string]any{"correct": correct}
		var notes []string
		tolerance, note := numericTolerance(root, own)
		if tolerance > 0 {
			config["tolerance"] = tolerance
		}
		if note != "" {
			notes = append(notes, note)
		}
		if span := classed(body, unitClass); span != nil {
			config["unit"] = span.textContent()
		}
		return assessment.TypeNumeric, config, notes, nil
	case "string", "":
		var accepted []any
		seen := map[string]bool{}
		caseSensitive := true
		entries := mappingEntries(decl)
		for _, e := range entries {
			if e.value > 0 && !seen[e.key] {
				seen[e.key] = true
				accepted = append(accepted, e.key)
				caseSensitive = caseSensitive && e.caseSensitive
			}
		}
		for _, v := range values {
			if !seen[v] {
				seen[v] = true
				accepted = append(accepted, v)
			}
		}
		if len(accepted) == 0 {
			return "", nil, nil, itemError("the text entry has no correct response")
		}
		config := map[string]any{"acceptedAnswers": accepted}
		if caseSensitive {
			config["caseSensitive"] = true
		}
		return assessment.TypeShortText, config, nil, nil
	}
	return "", nil, nil, itemError(fmt.Sprintf("the text entry's base type %q has no matching assessd question type", truncate(decl.attrs["base-type"], 40)))
}

// numericTolerance reads the absolute tolerance of a numeric item: a
// qti-equal tolerance, or the half-width of a gte/lte range check as
// assessd writes it.
func numericTolerance(root *node, own bool) (float64, string) {
	t := 0.0
	if eq := root.find("qti-equal"); eq != nil {
		switch eq.attrs["tolerance-mode"] {
		case "absolute":
			t, _ = strconv.ParseFloat(first(strings.Fields(eq.attrs["tolerance"])), 64)
		case "relative":
			return 0, "its relative tolerance cannot be represented; answers must match exactly"
		}
	} else if gte, lte := root.find("qti-gte"), root.find("qti-lte"); gte != nil && lte != nil {
		lo, errLo := strconv.ParseFloat(strings.TrimSpace(bound(gte)), 64)
		hi, errHi := strconv.ParseFloat(strings.TrimSpace(bound(lte)), 64)
		if errLo == nil && errHi == nil && hi >= lo {
			t = (hi - lo) / 2
		}
	}
	if own {
		t = roundTolerance(t - numericEpsilon)
	}
	return max(t, 0), ""
}

// bound is the base value a comparison compares the response with.
func bound(cmp *node) string {
	if v := cmp.child("qti-base-value"); v != nil {
		return v.textContent()
	}
	return ""
}

// roundTolerance removes the float noise left by subtracting the epsilon.
func roundTolerance(t float64) float64 {
	if t < numericEpsilon {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(t, 'g', 12, 64), 64)
	return r
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func withRubric(config map[string]any, body *node, own bool) map[string]any {
	for _, rb := range body.findAll(func(n *node) bool { return n.name == "qti-rubric-block" }) {
		if strings.Contains(rb.attrs["view"], "scorer") {
			content := rb
			if cb := rb.child("qti-content-body"); cb != nil {
				content = cb
			}
			config["rubric"] = paragraphText(content, own)
			break
		}
	}
	return config
}

// classed finds the first element with the class c.
func classed(n *node, c string) *node {
	found := n.findAll(func(k *node) bool { return k.hasClass(c) })
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

// paragraphText reverses paragraphs for assessd's own items; for other
// tools it keeps the text of each block on its own line.
func paragraphText(n *node, own bool) string {
	if own {
		var lines []string
		for _, p := range n.children("p") {
			lines = append(lines, p.textContent())
		}
		return strings.Join(lines, "\n")
	}
	return strings.Join(blockLines(n, nil), "\n")
}

// promptOf is the question text: assessd's prompt block, or the text of
// the body outside the interaction plus the interaction's own prompt.
func promptOf(body, in *node, own bool) string {
	if div := classed(body, promptClass); div != nil {
		return paragraphText(div, own)
	}
	var lines []string
	lines = blockLines(body, lines)
	if pr := in.child("qti-prompt"); pr != nil {
		lines = append(lines, blockLines(pr, nil)...)
	}
	return strings.Join(lines, "\n")
}

// blockLines collects the text of n's block elements, one line each,
// skipping interactions, rubrics and feedback.
func blockLines(n *node, lines []string) []string {
	var inline strings.Builder
	flush := func() {
		if s := collapse(inline.String()); s != "" {
			lines = append(lines, s)
		}
		inline.Reset()
	}
	for _, k := range n.kids {
		switch {
		case k.name == "":
			inline.WriteString(k.text)
		case strings.HasSuffix(k.name, "-interaction"), k.name == "qti-rubric-block", k.name == "qti-modal-feedback",
			strings.HasPrefix(k.name, "qti-feedback"), k.name == "qti-prompt":
		case blockElements[k.name]:
			flush()
			lines = blockLines(k, lines)
		default:
			inline.WriteString(k.textContent())
		}
	}
	flush()
	return lines
}

var blockElements = map[string]bool{"p": true, "div": true, "li": true, "ul": true, "ol": true, "h1": true, "h2": true,
	"h3": true, "h4": true, "h5": true, "h6": true, "blockquote": true, "pre": true, "table": true, "tr": true,
	"qti-content-body": true, "br": true}

// collapse trims s and reduces its inner whitespace to single spaces.
func collapse(s string) string { return strings.Join(strings.FieldsFunc(s, qtiWhitespace), " ") }
