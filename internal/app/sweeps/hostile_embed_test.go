package sweeps_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestHostileInputOverEmbedPages sends seeded, mutated forms to every form
// of the three embed flows (authoring, generate-exam and student-exam), as
// their host would frame them: values replaced by hostile ones, dropped or
// repeated, configuration fields with absurd row numbers, path ids
// malformed, another flow's or another organization's, bodies sent as
// multipart now and then, and uploads of empty, wrong or unnamed files. No
// answer may be a 5xx.
func TestHostileInputOverEmbedPages(t *testing.T) {
	t.Parallel()
	rounds, seed := hostileRounds(t)
	e := apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Sweep", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	question := func(typ string, config map[string]any) string {
		return apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": typ, "prompt": "Which?", "points": 1,
			"config": config}).Must(t, http.StatusOK).Body, "id")
	}
	choice := question("multiple_choice", map[string]any{"options": []any{
		map[string]any{"id": "a", "text": "Paris", "correct": true}, map[string]any{"id": "b", "text": "Lyon", "correct": false}}})
	numeric := question("numeric", map[string]any{"correct": 4})
	file := question("file_upload", map[string]any{"rubric": "notes"})
	authoring := e.EmbedSession(teacher, map[string]any{"flow": "authoring", "actor": tn.Users[tenancy.RoleTeacher].ID, "examId": exam})
	generating := e.EmbedSession(teacher, map[string]any{"flow": "generate-exam", "actor": tn.Users[tenancy.RoleTeacher].ID})
	student := e.EmbedSession(teacher, map[string]any{"flow": "student-exam", "actor": tn.Users[tenancy.RoleStudent].ID, "examId": exam})
	otherExam := apptest.Str(e.Do("POST", "/exams", other.Keys[tenancy.RoleTeacher], map[string]any{"name": "Theirs", "language": "de"}).Must(t, http.StatusOK).Body, "id")
	foreign := e.EmbedSession(other.Keys[tenancy.RoleTeacher], map[string]any{"flow": "authoring", "actor": other.Users[tenancy.RoleTeacher].ID, "examId": otherExam})
	generated := regexp.MustCompile(`/generations/(gen_[0-9A-Za-z]+)`).FindStringSubmatch(
		e.NewBrowser().Post(e.Srv.URL+"/embed/"+generating+"/generate", url.Values{"subject": {"Maths"}, "studentLevel": {"7"},
			"durationMinutes": {"30"}, "questionTypes": {"true_false"}}).URL.Path)
	if generated == nil {
		t.Fatal("fixtures: the generate form started no generation")
	}
	// Ready, as if the workflow had written the exam, so its editor opens.
	orgCtx := store.WithOrg(t.Context(), tn.Org.ID)
	if _, err := e.DB.Q(orgCtx).Exec(orgCtx, `UPDATE exam_generations SET status = 'ready', exam_id = $2 WHERE id = $1`, generated[1], exam); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{"{authoring}": authoring, "{generating}": generating, "{student}": student, "{question}": choice,
		"{file}": file, "{generation}": generated[1], "{regeneration}": "rgn_" + strings.Repeat("0", 26)}

	forms := []struct {
		path string
		form url.Values
	}{
		{"/embed/{authoring}/questions", url.Values{"type": {"multiple_choice"}, "prompt": {"Capital?"}, "points": {"2"},
			"config.options.0.id": {"a"}, "config.options.0.text": {"Paris"}, "config.options.0.correct": {"on"}, "config.options.1.text": {"Lyon"}}},
		{"/embed/{authoring}/questions", url.Values{"type": {"numeric"}, "prompt": {"2+2?"}, "points": {"1"}, "rawConfig": {"1"}, "config": {`{"correct":4}`}}},
		{"/embed/{authoring}/questions/{question}", url.Values{"prompt": {"Capital?"}, "points": {"1.5"},
			"config.options.0.id": {"a"}, "config.options.0.text": {"Paris"}, "config.options.0.correct": {"on"}, "config.options.1.id": {"b"}, "config.options.1.text": {"Lyon"}}},
		{"/embed/{authoring}/questions/order", url.Values{"order": {numeric, choice, file}}},
		{"/embed/{authoring}/questions/{question}/move", url.Values{"to": {"down"}}},
		{"/embed/{authoring}/questions/{question}/regenerate", url.Values{"instructions": {"harder"}}},
		{"/embed/{authoring}/regenerations/{regeneration}/accept", url.Values{}},
		{"/embed/{generating}/generate", url.Values{"subject": {"Maths"}, "studentLevel": {"7"}, "durationMinutes": {"30"}, "taxonomy": {"bloom"},
			"questionTypes": {"true_false", "numeric"}}},
		{"/embed/{generating}/generations/{generation}/edit", url.Values{}},
		{"/embed/{student}/answers", url.Values{choice: {"a"}, numeric: {"4"}}},
		{"/embed/{student}/files/{file}", nil}, // a multipart upload, built below
		{"/embed/{student}/files/{file}/remove", url.Values{"url": {e.Srv.URL + "/media/med_x/notes.txt"}}},
		// The deletion and the submission go last: they end what the
		// others use.
		{"/embed/{authoring}/questions/{question}/delete", url.Values{}},
		{"/embed/{student}/submit", url.Values{choice: {"a"}, numeric: {"4"}}},
	}
	hostile := []string{
		"", "\x00", "\xff\xfe", strings.Repeat("é", 40<<10), "<script>alert(1)</script>", "../../etc/passwd", "NaN", "1e309", "-1",
		"{", `{"options":[{"id":null}]}`, `[]`, "emb_" + strings.Repeat("0", 32), foreign, other.Users[tenancy.RoleStudent].ID,
		"config.options.999999999.text", "config.options.-1.id", "config..", "rawConfig", "\r\nSet-Cookie: x=y",
	}
	gets := []string{"/embed/{authoring}", "/embed/{generating}", "/embed/{student}", "/embed/{generating}/generations/{generation}",
		"/embed/{authoring}/regenerations/{regeneration}", "/embed/{authoring}/export"}
	rng := rand.New(rand.NewPCG(seed, seed^0xe4bed))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	client := &http.Client{}

	var sent int
	var failures []string
	// reached holds the routes whose handler did more than refuse the
	// session or the id, so the sweep is known to get past them.
	reached := map[string]bool{}
	var route string
	send := func(method, path string, body io.Reader, contentType string) {
		req, err := http.NewRequest(method, e.Srv.URL+path, body)
		if err != nil {
			return // a hostile id made an unparseable URL: nothing was sent
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if rng.IntN(3) == 0 {
			req.Header.Set("HX-Request", "true")
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		sent++
		if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusForbidden {
			reached[route] = true
		}
		if res.StatusCode >= 500 && len(failures) < 40 {
			failures = append(failures, fmt.Sprintf("%s %s: %d %.300s", method, path, res.StatusCode, answer))
		}
	}
	fill := func(path string) string {
		for _, placeholder := range slices.Sorted(maps.Keys(ids)) {
			id := ids[placeholder]
			switch rng.IntN(8) {
			case 0:
				id = pick(hostile)
			case 1:
				id = pick([]string{authoring, generating, student, foreign})
			}
			path = strings.ReplaceAll(path, placeholder, url.PathEscape(id))
		}
		return path
	}
	for _, f := range forms {
		route = f.path
		for range max(rounds/2, 1) {
			path := fill(f.path)
			if f.form == nil {
				body, contentType := hostileUpload(rng, pick(hostile))
				send(http.MethodPost, path, body, contentType)
				continue
			}
			form := mutatedForm(rng, f.form, hostile)
			switch rng.IntN(6) {
			case 0:
				body, contentType := multipartForm(form)
				send(http.MethodPost, path, body, contentType)
			case 1:
				send(http.MethodPost, path, strings.NewReader(form.Encode()), pick([]string{"", "text/plain", "application/json"}))
			default:
				send(http.MethodPost, path, strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
			}
		}
	}
	for _, g := range gets {
		route = g
		for range max(rounds/4, 1) {
			query := url.Values{"q": {pick(hostile)}, "type": {pick(hostile)}, "format": {pick(append([]string{"qti3", "json"}, hostile...))}}
			send(http.MethodGet, fill(g)+"?"+query.Encode(), nil, "")
		}
	}
	t.Logf("hostile embed input: %d requests (seed %d)", sent, seed)
	for _, f := range forms {
		if !reached[f.path] {
			t.Errorf("no request to %s got past the session and ids", f.path)
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// multipartForm encodes form as multipart/form-data.
func multipartForm(form url.Values) (io.Reader, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, k := range slices.Sorted(maps.Keys(form)) {
		for _, v := range form[k] {
			_ = mw.WriteField(k, v)
		}
	}
	_ = mw.Close()
	return &body, mw.FormDataContentType()
}

// hostileUpload is a multipart upload of one file part, or of a broken
// one: empty, named after a hostile value, of a type no question accepts,
// or with no file part at all.
func hostileUpload(rng *rand.Rand, hostile string) (io.Reader, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	name, data := "notes.txt", []byte("leaves are green")
	switch rng.IntN(5) {
	case 0:
		data = nil
	case 1:
		name = hostile
	case 2:
		data = []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0}
	case 3:
		_ = mw.WriteField("file", hostile)
		_ = mw.Close()
		return &body, mw.FormDataContentType()
	}
	part, _ := mw.CreateFormFile("file", name)
	_, _ = part.Write(data)
	_ = mw.Close()
	return &body, mw.FormDataContentType()
}
