package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// bareSave is the baseline's one statement: the response row assessd
// saves, by the same conflict key, one revision more, committed on its
// own.
const bareSave = `
	INSERT INTO attempt_responses AS r (attempt_id, question_id, org_id, value, files, revision)
	VALUES ($1, $2, $3, $4::jsonb, '[]', 1)
	ON CONFLICT (attempt_id, question_id) DO UPDATE
	   SET value = excluded.value, files = excluded.files, revision = r.revision + 1, saved_at = now()
	RETURNING revision, saved_at`

// baseline answers PUT /attempts/{id}/responses/{questionId} with bareSave
// and encoding/json: no authentication, quota, tenancy, transcoding,
// validation, idempotency, logging or metrics.
func baseline(pool *pgxpool.Pool, orgID string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /attempts/{id}/responses/{questionId}", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Value json.RawMessage `json:"value"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := struct {
			QuestionID string          `json:"questionId"`
			Value      json.RawMessage `json:"value"`
			Files      []string        `json:"files"`
			SavedAt    time.Time       `json:"savedAt"`
			Revision   int             `json:"revision"`
		}{QuestionID: r.PathValue("questionId"), Value: in.Value, Files: []string{}}
		if err := pool.QueryRow(r.Context(), bareSave, r.PathValue("id"), out.QuestionID, orgID, string(in.Value)).
			Scan(&out.Revision, &out.SavedAt); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}
