package assessment

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment/expr"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// TypeDef is a question type definition (spec 2.4): built in, or owned by
// an organization and possibly shared with others (Public).
type TypeDef struct {
	ID           string // "" for a built-in type
	OrgID        string // the owner; "" for a built-in type
	Key          string
	Name         string
	Description  string
	ConfigSchema map[string]any
	// Condition is the responseProcessing.condition (JSONata, "=...").
	Condition      string
	GradingEnabled bool
	// FileInputs is grading.fileInputs (JSONata, "=...").
	FileInputs string
	Public     bool
	Deprecated bool
	BuiltIn    bool
	// Owned reports whether the caller's organization owns the type.
	Owned bool
	// Enabled reports whether the caller's organization may use the type
	// for new questions (built in, owned, or enabled after discovery);
	// deprecation still refuses new questions.
	Enabled   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Ref is how questions name the type: the built-in key or the id.
func (t TypeDef) Ref() string {
	if t.BuiltIn {
		return t.Key
	}
	return t.ID
}

// NewTypeDef is the input of CreateQuestionType.
type NewTypeDef struct {
	Key            string
	Name           string
	Description    string
	ConfigSchema   map[string]any
	Condition      string
	GradingEnabled bool
	FileInputs     string
	Public         bool
	Deprecated     bool
}

// TypeDefPatch changes the fields that are set. The key is fixed at
// creation: it is how authors recognise the type.
type TypeDefPatch struct {
	Name           *string
	Description    *string
	ConfigSchema   map[string]any
	Condition      *string
	GradingEnabled *bool
	FileInputs     *string
	Public         *bool
	Deprecated     *bool
}

var keyPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{1,62}$`)

// typeColumns reads a definition as seen by the caller's organization.
// Row-level security shows a row of another organization only while it is
// public, which is exactly when it resolves there (decision 0021).
const typeColumns = `t.id, t.org_id, t.key, t.name, t.description, t.config_schema, t.condition,
	t.grading_enabled, t.file_inputs, t.public, t.deprecated, t.org_id = app_org_id(),
	t.org_id = app_org_id() OR EXISTS (SELECT 1 FROM question_type_enablements n
	                                    WHERE n.org_id = app_org_id() AND n.type_id = t.id),
	t.created_at, t.updated_at`

func scanTypeDef(row pgx.Row) (TypeDef, error) {
	var t TypeDef
	err := row.Scan(&t.ID, &t.OrgID, &t.Key, &t.Name, &t.Description, &t.ConfigSchema, &t.Condition,
		&t.GradingEnabled, &t.FileInputs, &t.Public, &t.Deprecated, &t.Owned, &t.Enabled,
		&t.CreatedAt, &t.UpdatedAt)
	return t, err
}

func typeSnapshot(t TypeDef) map[string]any {
	return map[string]any{"key": t.Key, "name": t.Name, "description": t.Description,
		"configSchema": t.ConfigSchema, "responseProcessing": map[string]any{"condition": t.Condition},
		"grading": map[string]any{"enabled": t.GradingEnabled, "fileInputs": t.FileInputs},
		"public":  t.Public, "deprecated": t.Deprecated}
}

// validate checks a definition before it is saved. Both expressions must
// compile within the evaluator's bounds; the 400 names the field and says
// why.
func (t *TypeDef) validate() error {
	var err error
	if t.Name, err = text("name", t.Name, true, 200); err != nil {
		return err
	}
	if t.Description, err = text("description", t.Description, false, 2000); err != nil {
		return err
	}
	if _, err := compileSchema("configSchema", t.ConfigSchema); err != nil {
		return err
	}
	if t.Condition != "" {
		if _, err := expr.Compile(t.Condition); err != nil {
			return errs.Invalid("responseProcessing.condition", "%s", err.Error())
		}
	}
	if t.FileInputs != "" {
		if !t.GradingEnabled {
			return errs.Invalid("grading.fileInputs", "applies only when grading.enabled is true")
		}
		if _, err := expr.Compile(t.FileInputs); err != nil {
			return errs.Invalid("grading.fileInputs", "%s", err.Error())
		}
	}
	switch {
	case t.Condition == "" && !t.GradingEnabled:
		return errs.Invalid("responseProcessing.condition", "is required unless grading.enabled is true: a type must say how answers are scored")
	case t.Condition != "" && t.GradingEnabled:
		return errs.Invalid("grading.enabled", "cannot be combined with responseProcessing.condition: a type is scored by rules or by AI, not both")
	}
	return nil
}

// QuestionTypes lists the types the organization can use: the built-in
// ones in their documented order, then its own and those it enabled,
// oldest first. A page token names the last type's key or id.
func (s *Service) QuestionTypes(ctx context.Context, p paging.Page) ([]TypeDef, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestionTypes); err != nil {
		return nil, "", err
	}
	var out []TypeDef
	custom := p
	if !ids.Valid(ids.QuestionType, p.After) {
		keys := BuiltinKeys()
		start := 0
		if p.After != "" {
			i := slices.Index(keys, p.After)
			if i < 0 {
				return nil, "", errs.Invalid("pageToken", "is not a token returned by this list")
			}
			start = i + 1
		}
		for _, k := range keys[start:min(len(keys), start+p.Limit())] {
			out = append(out, builtins[k])
		}
		custom = paging.Page{Size: p.Limit() - len(out), After: ""}
	}
	if custom.Size > 0 {
		more, _, err := s.listTypes(ctx, `(t.org_id = app_org_id() OR EXISTS (SELECT 1 FROM question_type_enablements n
		                           WHERE n.org_id = app_org_id() AND n.type_id = t.id))`, custom)
		if err != nil {
			return nil, "", err
		}
		out = append(out, more...)
	}
	out, next := paging.Trim(p, out, TypeDef.Ref)
	return out, next, nil
}

// DiscoverQuestionTypes lists the public, non-deprecated types of other
// organizations that the caller's organization has not enabled.
func (s *Service) DiscoverQuestionTypes(ctx context.Context, p paging.Page) ([]TypeDef, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestionTypes); err != nil {
		return nil, "", err
	}
	return s.listTypes(ctx, `t.public AND NOT t.deprecated AND t.org_id <> app_org_id()
	   AND NOT EXISTS (SELECT 1 FROM question_type_enablements n WHERE n.org_id = app_org_id() AND n.type_id = t.id)`, p)
}

func (s *Service) listTypes(ctx context.Context, where string, p paging.Page) ([]TypeDef, string, error) {
	out, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanTypeDef, func(t TypeDef) string { return t.ID },
		`SELECT `+typeColumns+` FROM question_types t
		 WHERE `+where+` AND t.id > $1 ORDER BY t.id LIMIT $2`, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list question types: %w", err)
	}
	return out, next, nil
}

// QuestionType returns a definition by id, or a built-in one by key. Other
// organizations' types are found only while public.
func (s *Service) QuestionType(ctx context.Context, ref string) (TypeDef, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestionTypes); err != nil {
		return TypeDef{}, err
	}
	if b, ok := builtins[ref]; ok {
		return b, nil
	}
	t, err := s.loadType(ctx, s.db.Q(ctx), "id", ref, false)
	if err == nil && t.Deprecated && !t.Enabled {
		// Spec 2.4: an organization that never enabled a deprecated type
		// can no longer discover it, by list or by id.
		return TypeDef{}, errs.NotFound("question type")
	}
	return t, err
}

func (s *Service) loadType(ctx context.Context, q store.Querier, field, id string, ownedForUpdate bool) (TypeDef, error) {
	if !ids.Valid(ids.QuestionType, id) {
		return TypeDef{}, errs.Invalid(field, "must be a question type id (qtp_...) or a built-in type key")
	}
	sql := `SELECT ` + typeColumns + ` FROM question_types t WHERE t.id = $1`
	if ownedForUpdate {
		sql += ` AND t.org_id = app_org_id() FOR UPDATE`
	}
	t, err := scanTypeDef(q.QueryRow(ctx, sql, id))
	if isNoRows(err) {
		return TypeDef{}, errs.NotFound("question type")
	}
	if err != nil {
		return TypeDef{}, fmt.Errorf("load question type: %w", err)
	}
	return t, nil
}

// CreateQuestionType adds a custom type owned by the caller's organization.
func (s *Service) CreateQuestionType(ctx context.Context, in NewTypeDef) (TypeDef, error) {
	caller, err := tenancy.Authorize(ctx, WriteQuestionTypes)
	if err != nil {
		return TypeDef{}, err
	}
	if !keyPattern.MatchString(in.Key) {
		return TypeDef{}, errs.Invalid("key", "must be 2 to 63 lowercase letters, digits or underscores, starting with a letter")
	}
	if isBuiltin(in.Key) {
		return TypeDef{}, errs.Invalid("key", "is the key of a built-in type")
	}
	if in.ConfigSchema == nil {
		// No schema: the configuration is any JSON object.
		in.ConfigSchema = map[string]any{"type": "object"}
	}
	t := TypeDef{Key: in.Key, Name: in.Name, Description: in.Description, ConfigSchema: in.ConfigSchema,
		Condition: in.Condition, GradingEnabled: in.GradingEnabled, FileInputs: in.FileInputs,
		Public: in.Public, Deprecated: in.Deprecated}
	if err := t.validate(); err != nil {
		return TypeDef{}, err
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		id := ids.New(ids.QuestionType)
		_, err := q.Exec(ctx, `
			INSERT INTO question_types (id, org_id, key, name, description, config_schema, condition,
			                            grading_enabled, file_inputs, public, deprecated)
			VALUES ($1, app_org_id(), $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10)`,
			id, t.Key, t.Name, t.Description, store.JSON{V: t.ConfigSchema}, t.Condition, t.GradingEnabled,
			t.FileInputs, t.Public, t.Deprecated)
		if errors.Is(err, store.ErrUniqueViolation) {
			return errs.Conflict("QUESTION_TYPE_KEY_TAKEN", "the organization already has a question type with this key")
		}
		if err != nil {
			return fmt.Errorf("create question type: %w", err)
		}
		if t, err = s.loadType(ctx, q, "id", id, false); err != nil {
			return err
		}
		return s.audit(ctx, caller, "question_type.created", "question_type", id, nil, typeSnapshot(t))
	})
	return t, err
}

// UpdateQuestionType changes one of the organization's own types. Other
// organizations' types are not found, even when public.
func (s *Service) UpdateQuestionType(ctx context.Context, id string, p TypeDefPatch) (TypeDef, error) {
	caller, err := tenancy.Authorize(ctx, WriteQuestionTypes)
	if err != nil {
		return TypeDef{}, err
	}
	var t TypeDef
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadType(ctx, q, "id", id, true)
		if err != nil {
			return err
		}
		t = before
		setIf(&t.Name, p.Name)
		setIf(&t.Description, p.Description)
		setIf(&t.Condition, p.Condition)
		setIf(&t.GradingEnabled, p.GradingEnabled)
		setIf(&t.FileInputs, p.FileInputs)
		setIf(&t.Public, p.Public)
		setIf(&t.Deprecated, p.Deprecated)
		if p.ConfigSchema != nil {
			t.ConfigSchema = p.ConfigSchema
		}
		if err := t.validate(); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `
			UPDATE question_types SET name = $2, description = $3, config_schema = $4::jsonb, condition = $5,
			       grading_enabled = $6, file_inputs = $7, public = $8, deprecated = $9, updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1`,
			id, t.Name, t.Description, store.JSON{V: t.ConfigSchema}, t.Condition, t.GradingEnabled, t.FileInputs,
			t.Public, t.Deprecated); err != nil {
			return fmt.Errorf("update question type: %w", err)
		}
		if t, err = s.loadType(ctx, q, "id", id, false); err != nil {
			return err
		}
		if err := s.audit(ctx, caller, "question_type.updated", "question_type", id, typeSnapshot(before), typeSnapshot(t)); err != nil {
			return err
		}
		return s.auditTypeStatus(ctx, caller, before, t)
	})
	return t, err
}

// auditTypeStatus records, beside the update itself, the two changes that
// affect other organizations (spec 2.4): deprecating a type and making it
// private.
func (s *Service) auditTypeStatus(ctx context.Context, caller *tenancy.Caller, before, after TypeDef) error {
	if after.Deprecated && !before.Deprecated {
		if err := s.audit(ctx, caller, "question_type.deprecated", "question_type", after.ID, nil, map[string]any{"key": after.Key}); err != nil {
			return err
		}
	}
	if before.Public && !after.Public {
		return s.audit(ctx, caller, "question_type.made_private", "question_type", after.ID, nil, map[string]any{"key": after.Key})
	}
	return nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// EnableQuestionType lets the caller's organization create questions of
// another organization's public type. A deprecated type can no longer be
// enabled; enabling an enabled type changes nothing.
func (s *Service) EnableQuestionType(ctx context.Context, id string) (TypeDef, error) {
	caller, err := tenancy.Authorize(ctx, WriteQuestionTypes)
	if err != nil {
		return TypeDef{}, err
	}
	var t TypeDef
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if t, err = s.loadType(ctx, q, "id", id, false); err != nil {
			return err
		}
		switch {
		case t.Owned:
			return errs.FailedPrecondition("QUESTION_TYPE_OWNED", "the organization's own question types are always enabled")
		case t.Enabled:
			return nil
		case t.Deprecated:
			return errs.FailedPrecondition("QUESTION_TYPE_DEPRECATED", "the question type is deprecated and can no longer be enabled")
		}
		if _, err := q.Exec(ctx, `INSERT INTO question_type_enablements (org_id, type_id) VALUES (app_org_id(), $1)
			ON CONFLICT DO NOTHING`, id); err != nil {
			return fmt.Errorf("enable question type: %w", err)
		}
		t.Enabled = true
		return s.audit(ctx, caller, "question_type.enabled", "question_type", id, nil, map[string]any{"key": t.Key, "ownerOrgId": t.OrgID})
	})
	return t, err
}

// DisableQuestionType withdraws an enablement: no new questions of the
// type. Existing questions keep resolving while the owner keeps the type
// public (decision 0021).
func (s *Service) DisableQuestionType(ctx context.Context, id string) (TypeDef, error) {
	caller, err := tenancy.Authorize(ctx, WriteQuestionTypes)
	if err != nil {
		return TypeDef{}, err
	}
	var t TypeDef
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if t, err = s.loadType(ctx, q, "id", id, false); err != nil {
			return err
		}
		if t.Owned {
			return errs.FailedPrecondition("QUESTION_TYPE_OWNED", "the organization's own question types cannot be disabled; deprecate them instead")
		}
		if !t.Enabled {
			return nil
		}
		if _, err := q.Exec(ctx, `DELETE FROM question_type_enablements WHERE org_id = app_org_id() AND type_id = $1`, id); err != nil {
			return fmt.Errorf("disable question type: %w", err)
		}
		t.Enabled = false
		return s.audit(ctx, caller, "question_type.disabled", "question_type", id, map[string]any{"key": t.Key, "ownerOrgId": t.OrgID}, nil)
	})
	return t, err
}

// typeForNewQuestion resolves the type a new question (or a question
// changing its type) names, and refuses what spec 2.4 refuses.
func (s *Service) typeForNewQuestion(ctx context.Context, q store.Querier, ref string) (TypeDef, error) {
	if ref == "" {
		return TypeDef{}, errs.Invalid("type", "is required (a built-in type key or a question type id)")
	}
	if b, ok := builtins[ref]; ok {
		return b, nil
	}
	if !ids.Valid(ids.QuestionType, ref) {
		// API.md: type is a key or an id; a key names one of the
		// organization's own types.
		var err error
		if ref, err = s.ownTypeID(ctx, q, ref); err != nil {
			return TypeDef{}, err
		}
	}
	t, err := s.loadType(ctx, q, "type", ref, false)
	if errs.Is(err, errs.KindNotFound) {
		return TypeDef{}, errs.Invalid("type", "names no question type available to this organization")
	}
	if err != nil {
		return TypeDef{}, err
	}
	if t.Deprecated {
		return TypeDef{}, errs.FailedPrecondition("QUESTION_TYPE_DEPRECATED", "the question type %s is deprecated: no new questions of it can be created", t.Key)
	}
	if !t.Enabled {
		return TypeDef{}, errs.FailedPrecondition("QUESTION_TYPE_NOT_ENABLED", "the question type %s belongs to another organization; enable it first", t.Key)
	}
	return t, nil
}

// ownTypeID returns the id of the organization's own type with key.
func (s *Service) ownTypeID(ctx context.Context, q store.Querier, key string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM question_types WHERE org_id = app_org_id() AND key = $1`, key).Scan(&id)
	if isNoRows(err) {
		return "", errs.Invalid("type", "names no built-in type, no type of this organization and no question type id")
	}
	if err != nil {
		return "", fmt.Errorf("resolve question type key: %w", err)
	}
	return id, nil
}
