package app_test

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"sync"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestWritesRacingADeletion sends requests that name a folder, an exam or
// an OAuth client while that row's deletion commits under them: each
// answers as it would a moment later, never with a server fault.
func TestWritesRacingADeletion(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	e := apptest.NewAt(t, url)
	school, vendor := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher := school.Keys[tenancy.RoleTeacher]
	folder := func() string {
		return apptest.Str(e.Do("POST", "/folders", teacher, map[string]any{"name": "Term 1"}).Must(t, http.StatusOK).Body, "id")
	}
	client := func() string {
		return e.NewOAuthApp(vendor, tenancy.RoleTeacher, clients.ClientInput{}).Client.ID
	}
	exam := func() string {
		return apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	}
	var blank bytes.Buffer
	if err := png.Encode(&blank, image.NewGray(image.Rect(0, 0, 200, 280))); err != nil {
		t.Fatal(err)
	}
	page := blank.Bytes()
	cases := []struct {
		name    string
		deleted func() string // the row to delete, made before the request
		table   string
		request func(id string) response
		status  int
		reason  string
	}{
		{"an exam created in a folder", folder, "folders", func(id string) response {
			return e.Do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en", "folderId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"an exam moved into a folder", folder, "folders", func(id string) response {
			return e.Do("PATCH", "/exams/"+exam(), teacher, map[string]any{"folderId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"a folder created in a folder", folder, "folders", func(id string) response {
			return e.Do("POST", "/folders", teacher, map[string]any{"name": "Week 1", "parentId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"a folder moved into a folder", folder, "folders", func(id string) response {
			return e.Do("PATCH", "/folders/"+folder(), teacher, map[string]any{"parentId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"an answer-sheet scan of an exam", exam, "exams", func(id string) response {
			return upload(e, id, teacher, page)
		}, http.StatusNotFound, "EXAM_NOT_FOUND"},
		{"another organization's OAuth client allowed", client, "oauth_clients", func(id string) response {
			return e.Do("POST", "/org/allowed-clients", school.Keys[tenancy.RoleOwner], map[string]any{"clientId": id, "scopes": []string{"audit-logs:write"}})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
	}
	for _, c := range cases {
		id := c.deleted()
		var r response
		_ = storetest.DeleteDuring(t, url, `DELETE FROM `+c.table+` WHERE id = $1`, []any{id}, func() error {
			r = c.request(id)
			return nil
		})
		if r.Status != c.status || r.Reason() != c.reason {
			t.Errorf("%s as it is deleted: %d %s, want %d %s", c.name, r.Status, r.Raw, c.status, c.reason)
		}
	}
}

// TestConcurrentFolderMoves moves one folder into another while that one
// moves too, many times over: each move waits for its turn and none fails.
// A move holds its folder's row lock while it waits for the organization's
// folder lock, so that lock must not conflict with the parent's share lock
// that the other move takes.
func TestConcurrentFolderMoves(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	teacher := e.NewTenant("US", "pro").Keys[tenancy.RoleTeacher]
	folder := func(name string) string {
		return apptest.Str(e.Do("POST", "/folders", teacher, map[string]any{"name": name}).Must(t, http.StatusOK).Body, "id")
	}
	for range 20 {
		x, y, z := folder("x"), folder("y"), folder("z")
		var wg sync.WaitGroup
		statuses := make([]response, 2)
		for i, move := range [][2]string{{x, y}, {y, z}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = e.Do("PATCH", "/folders/"+move[0], teacher, map[string]any{"parentId": move[1]})
			}()
		}
		wg.Wait()
		for _, r := range statuses {
			if r.Status != http.StatusOK {
				t.Fatalf("concurrent folder moves: %d %s", r.Status, r.Raw)
			}
		}
	}
}
