package exchange

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// packageSide is the package's side file: what QTI has no place for (the
// exam's description, duration as assessd stores it) and the custom type
// definitions the items' side files name.
type packageSide struct {
	Schema        string    `json:"schema"`
	Exam          DocExam   `json:"exam"`
	QuestionTypes []DocType `json:"questionTypes"`
}

// itemSide is an item's side file: the question exactly as assessd holds
// it. ItemSHA256 is the digest of the item XML it was written with; an
// item changed by another tool no longer matches, and import then trusts
// the QTI (decision 0071).
type itemSide struct {
	Schema     string         `json:"schema"`
	ItemSHA256 string         `json:"itemSha256"`
	Type       string         `json:"type"`
	TypeKey    string         `json:"typeKey,omitempty"`
	Revision   int            `json:"revision"`
	Config     map[string]any `json:"config"`
}

// writtenItem is what the manifest needs to know of an item once written.
type writtenItem struct {
	identifier, href, side string
	media                  []string
}

// WriteQTI writes doc as an IMS QTI 3.0 content package to w, entry by
// entry: the items with their side files, the test, the package side
// file, and last the manifest that lists them all. Only one item is held
// in memory at a time.
func WriteQTI(w io.Writer, doc Document) error {
	zw := zip.NewWriter(w)
	items := make([]writtenItem, 0, len(doc.Questions))
	used := map[string]bool{}
	for i, q := range doc.Questions {
		it, err := writeItem(zw, doc, i, q, used)
		if err != nil {
			return err
		}
		items = append(items, it)
	}
	if err := putXML(zw, testName, testXML(doc, items)); err != nil {
		return err
	}
	if err := putJSON(zw, packageSideName, packageSide{Schema: packageSchema, Exam: doc.Exam, QuestionTypes: doc.QuestionTypes}); err != nil {
		return err
	}
	if err := putXML(zw, manifestName, manifestXML(doc, items)); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write QTI package: %w", err)
	}
	return nil
}

func writeItem(zw *zip.Writer, doc Document, i int, q DocQuestion, used map[string]bool) (writtenItem, error) {
	id := q.ID
	if !isNCName(id) || used[id] {
		id = fmt.Sprintf("Q%04d", i+1)
	}
	used[id] = true
	it := writtenItem{identifier: id, href: "items/" + id + ".xml", side: "items/" + id + itemSideSuffix,
		media: mediaURLs(q)}
	root := itemXML(id, itemTitle(q.Prompt, i), doc.Exam.Language, q, itemFor(q))
	f, err := create(zw, it.href)
	if err != nil {
		return it, err
	}
	digest := sha256.New()
	if err := writeXML(io.MultiWriter(f, digest), root); err != nil {
		return it, fmt.Errorf("write QTI item %s: %w", id, err)
	}
	side := itemSide{Schema: itemSideSchema, ItemSHA256: hex.EncodeToString(digest.Sum(nil)), Type: q.Type,
		TypeKey: q.TypeKey, Revision: q.Revision, Config: q.Config}
	return it, putJSON(zw, it.side, side)
}

// itemTitle is the prompt's first line, shortened; QTI requires a title.
func itemTitle(prompt string, i int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if line == "" {
		return fmt.Sprintf("Question %d", i+1)
	}
	if r := []rune(line); len(r) > 100 {
		return string(r[:100]) + "…"
	}
	return line
}

// mediaPattern finds absolute http(s) URLs in a prompt or config string.
var mediaPattern = regexp.MustCompile(`https?://[^\s"'<>()\[\]{}]+`)

// mediaURLs lists the URLs a question references, in order, once each.
func mediaURLs(q DocQuestion) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			for _, u := range mediaPattern.FindAllString(v, -1) {
				u = strings.TrimRight(u, ".,;:!?")
				if !seen[u] {
					seen[u] = true
					out = append(out, u)
				}
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(q.Prompt)
	walk(q.Config)
	return out
}

// testXML lists the items in question order in one linear section; the
// test's SCORE and MAXSCORE sum the items'.
func testXML(doc Document, items []writtenItem) *elem {
	root := el("qti-assessment-test", "xmlns", nsQTI3, "xmlns:xsi", nsXSI,
		"xsi:schemaLocation", nsQTI3+" "+schemaQTI3, "identifier", testIdentifier(doc), "title", doc.Exam.Name,
		"tool-name", toolName, "tool-version", toolVersion)
	root.add(outcomeDecl(scoreID, "single", "float", ""), outcomeDecl(maxScoreID, "single", "float", ""))
	if doc.Exam.DurationMinutes > 0 {
		root.add(el("qti-time-limits", "max-time", fmt.Sprint(doc.Exam.DurationMinutes*60)))
	}
	section := el("qti-assessment-section", "identifier", "S1", "title", doc.Exam.Name, "visible", "true")
	for _, it := range items {
		section.add(el("qti-assessment-item-ref", "identifier", it.identifier, "href", it.href))
	}
	root.add(el("qti-test-part", "identifier", "P1", "navigation-mode", "nonlinear", "submission-mode", "simultaneous").add(section))
	sum := func(id string) *elem {
		return el("qti-set-outcome-value", "identifier", id).add(el("qti-sum").add(el("qti-test-variables", "variable-identifier", id)))
	}
	return root.add(el("qti-outcome-processing").add(sum(scoreID), sum(maxScoreID)))
}

func testIdentifier(doc Document) string {
	if isNCName(doc.Exam.ID) {
		return doc.Exam.ID
	}
	return "TEST"
}

// manifestXML lists the test, each item with its side file and the media
// it references, the package side file, and each media URL once as an
// external web resource (whose file, which QTI 3's profile of IMS CP
// requires, is the URL itself).
func manifestXML(doc Document, items []writtenItem) *elem {
	resources := el("resources")
	test := el("resource", "identifier", "RES-TEST", "type", "imsqti_test_xmlv3p0", "href", testName).add(el("file", "href", testName))
	resources.add(test)
	mediaIDs := map[string]string{}
	var mediaOrder []string
	for _, it := range items {
		test.add(el("dependency", "identifierref", "RES-"+it.identifier))
	}
	for _, it := range items {
		r := el("resource", "identifier", "RES-"+it.identifier, "type", "imsqti_item_xmlv3p0", "href", it.href).add(
			el("file", "href", it.href), el("file", "href", it.side))
		for _, u := range it.media {
			mid, ok := mediaIDs[u]
			if !ok {
				mid = fmt.Sprintf("RES-MEDIA-%d", len(mediaIDs)+1)
				mediaIDs[u] = mid
				mediaOrder = append(mediaOrder, u)
			}
			r.add(el("dependency", "identifierref", mid))
		}
		resources.add(r)
	}
	resources.add(el("resource", "identifier", "RES-ASSESSD", "type", "webcontent", "href", packageSideName).add(el("file", "href", packageSideName)))
	for _, u := range mediaOrder {
		resources.add(el("resource", "identifier", mediaIDs[u], "type", "webcontent", "href", u).add(el("file", "href", u)))
	}
	return el("manifest", "xmlns", nsCP3, "xmlns:xsi", nsXSI, "xsi:schemaLocation", nsCP3+" "+schemaCP3,
		"identifier", "MANIFEST-"+testIdentifier(doc)).add(
		el("metadata").add(el("schema").withText("QTI Package"), el("schemaversion").withText("3.0.0")),
		el("organizations"),
		resources)
}

// create starts an entry dated now: archive tools show a zero date as 1980.
func create(zw *zip.Writer, name string) (io.Writer, error) {
	f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now().UTC()})
	if err != nil {
		return nil, fmt.Errorf("write QTI package entry %s: %w", name, err)
	}
	return f, nil
}

func putXML(zw *zip.Writer, name string, root *elem) error {
	f, err := create(zw, name)
	if err != nil {
		return err
	}
	if err := writeXML(f, root); err != nil {
		return fmt.Errorf("write QTI package entry %s: %w", name, err)
	}
	return nil
}

func putJSON(zw *zip.Writer, name string, v any) error {
	f, err := create(zw, name)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write QTI package entry %s: %w", name, err)
	}
	return nil
}
