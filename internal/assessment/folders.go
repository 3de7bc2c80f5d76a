package assessment

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Folder groups exams and other folders.
type Folder struct {
	ID        string
	ParentID  string // "" for a top-level folder
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// FolderPatch changes the fields that are set. ParentID "" moves the
// folder to the top level.
type FolderPatch struct {
	Name     *string
	ParentID *string
}

// maxFolderDepth bounds nesting, so paths stay displayable and the
// ancestor walk stays short.
const maxFolderDepth = 20

const folderColumns = `id, coalesce(parent_id, ''), name, created_at, updated_at`

func scanFolder(row pgx.Row) (Folder, error) {
	var f Folder
	err := row.Scan(&f.ID, &f.ParentID, &f.Name, &f.CreatedAt, &f.UpdatedAt)
	return f, err
}

func folderSnapshot(f Folder) map[string]any {
	return map[string]any{"name": f.Name, "parentId": f.ParentID}
}

// Folders lists the organization's folders, oldest first; parentID
// narrows the list to one folder's children ("root" for top-level ones).
func (s *Service) Folders(ctx context.Context, parentID string, p paging.Page) ([]Folder, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadExams); err != nil {
		return nil, "", err
	}
	if parentID != "" && parentID != "root" {
		if err := checkID("parentId", ids.Folder, parentID, "a folder"); err != nil {
			return nil, "", err
		}
	}
	out, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanFolder, func(f Folder) string { return f.ID }, `
		SELECT `+folderColumns+` FROM folders
		 WHERE org_id = app_org_id()
		   AND ($1 = '' OR ($1 = 'root' AND parent_id IS NULL) OR parent_id = $1)
		   AND id > $2
		 ORDER BY id LIMIT $3`, parentID, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list folders: %w", err)
	}
	return out, next, nil
}

// Folder returns one folder.
func (s *Service) Folder(ctx context.Context, id string) (Folder, error) {
	if _, err := tenancy.Authorize(ctx, ReadExams); err != nil {
		return Folder{}, err
	}
	return s.loadFolder(ctx, s.db.Q(ctx), "id", id, store.NoLock)
}

func (s *Service) loadFolder(ctx context.Context, q store.Querier, field, id string, lock store.RowLock) (Folder, error) {
	if err := checkID(field, ids.Folder, id, "a folder"); err != nil {
		return Folder{}, err
	}
	sql := `SELECT ` + folderColumns + ` FROM folders WHERE org_id = app_org_id() AND id = $1`
	sql += string(lock)
	f, err := scanFolder(q.QueryRow(ctx, sql, id))
	if isNoRows(err) {
		return Folder{}, errs.NotFound("folder")
	}
	if err != nil {
		return Folder{}, fmt.Errorf("load folder: %w", err)
	}
	return f, nil
}

// CreateFolder adds a folder, at the top level or inside parentID.
func (s *Service) CreateFolder(ctx context.Context, name, parentID string) (Folder, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return Folder{}, err
	}
	if name, err = text("name", name, true, 200); err != nil {
		return Folder{}, err
	}
	var f Folder
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if parentID != "" {
			if err := s.checkParent(ctx, q, "", parentID); err != nil {
				return err
			}
		}
		f, err = scanFolder(q.QueryRow(ctx, `
			INSERT INTO folders (id, org_id, parent_id, name) VALUES ($1, app_org_id(), nullif($2, ''), $3)
			RETURNING `+folderColumns, ids.New(ids.Folder), parentID, name))
		if err != nil {
			return fmt.Errorf("create folder: %w", err)
		}
		return s.audit(ctx, caller, "folder.created", "folder", f.ID, nil, folderSnapshot(f))
	})
	return f, err
}

// checkParent verifies that parentID may hold folder id ("" for a new
// folder): it exists, is not id itself or one of its descendants, and the
// nesting stays within maxFolderDepth. Moves are serialized per
// organization (an advisory lock), so two concurrent moves cannot build a
// cycle together; the parent is kept from being deleted until ctx's
// transaction ends.
func (s *Service) checkParent(ctx context.Context, q store.Querier, id, parentID string) error {
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('folders:' || app_org_id()))`); err != nil {
		return fmt.Errorf("lock folders: %w", err)
	}
	if _, err := s.loadFolder(ctx, q, "parentId", parentID, store.ForKeyShare); err != nil {
		if errs.Is(err, errs.KindNotFound) {
			return errs.Invalid("parentId", "names no folder of this organization")
		}
		return err
	}
	// The parent's ancestors, itself included.
	var cycle bool
	var depth int
	err := q.QueryRow(ctx, `
		WITH RECURSIVE up(id, parent_id, depth) AS (
		  SELECT id, parent_id, 1 FROM folders WHERE org_id = app_org_id() AND id = $1
		  UNION ALL
		  SELECT f.id, f.parent_id, up.depth + 1 FROM folders f JOIN up ON f.id = up.parent_id
		   WHERE f.org_id = app_org_id() AND up.depth <= $3
		)
		SELECT coalesce(bool_or(id = $2), false), coalesce(max(depth), 0) FROM up`,
		parentID, id, maxFolderDepth+1).Scan(&cycle, &depth)
	if err != nil {
		return fmt.Errorf("check folder parent: %w", err)
	}
	if cycle {
		return errs.Invalid("parentId", "would put the folder inside itself")
	}
	var below int
	if id != "" {
		err = q.QueryRow(ctx, `
			WITH RECURSIVE down(id, depth) AS (
			  SELECT id, 1 FROM folders WHERE org_id = app_org_id() AND id = $1
			  UNION ALL
			  SELECT f.id, down.depth + 1 FROM folders f JOIN down ON f.parent_id = down.id
			   WHERE f.org_id = app_org_id() AND down.depth <= $2
			)
			SELECT max(depth) FROM down`, id, maxFolderDepth+1).Scan(&below)
		if err != nil {
			return fmt.Errorf("check folder depth: %w", err)
		}
	} else {
		below = 1
	}
	if depth+below > maxFolderDepth {
		return errs.Invalid("parentId", "would nest folders more than %d levels deep", maxFolderDepth)
	}
	return nil
}

// UpdateFolder renames or moves a folder.
func (s *Service) UpdateFolder(ctx context.Context, id string, p FolderPatch) (Folder, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return Folder{}, err
	}
	var f Folder
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadFolder(ctx, q, "id", id, store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		f = before
		if p.Name != nil {
			if f.Name, err = text("name", *p.Name, true, 200); err != nil {
				return err
			}
		}
		if p.ParentID != nil && *p.ParentID != before.ParentID {
			if *p.ParentID != "" {
				if err := s.checkParent(ctx, q, id, *p.ParentID); err != nil {
					return err
				}
			}
			f.ParentID = *p.ParentID
		}
		f, err = scanFolder(q.QueryRow(ctx, `
			UPDATE folders SET name = $2, parent_id = nullif($3, ''), updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 RETURNING `+folderColumns, id, f.Name, f.ParentID))
		if err != nil {
			return fmt.Errorf("update folder: %w", err)
		}
		return s.audit(ctx, caller, "folder.updated", "folder", id, folderSnapshot(before), folderSnapshot(f))
	})
	return f, err
}

// DeleteFolder removes an empty folder. A folder that still holds folders
// or exams is a conflict (decision 0022): deleting content must be explicit.
func (s *Service) DeleteFolder(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		f, err := s.loadFolder(ctx, q, "id", id, store.ForUpdate)
		if err != nil {
			return err
		}
		var used bool
		err = q.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM folders WHERE org_id = app_org_id() AND parent_id = $1)
			    OR EXISTS (SELECT 1 FROM exams WHERE org_id = app_org_id() AND folder_id = $1)`, id).Scan(&used)
		if err != nil {
			return fmt.Errorf("delete folder: %w", err)
		}
		if used {
			return errs.Conflict("FOLDER_NOT_EMPTY", "the folder still contains folders or exams; move or delete them first")
		}
		if _, err := q.Exec(ctx, `DELETE FROM folders WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete folder: %w", err)
		}
		return s.audit(ctx, caller, "folder.deleted", "folder", id, folderSnapshot(f), nil)
	})
}

// audit appends an entry for an assessment change inside ctx's transaction.
func (s *Service) audit(ctx context.Context, caller *tenancy.Caller, action, targetType, id string, before, after map[string]any) error {
	return s.auditAs(ctx, tenancy.ActorOf(caller), action, targetType, id, before, after)
}

// gradingActor is the platform's grading, which finishes results after
// their submitter's request is long gone.
var gradingActor = audit.Actor{Kind: audit.ActorSystem, ID: "grading"}

// auditAs appends an entry performed by actor inside ctx's transaction.
func (s *Service) auditAs(ctx context.Context, actor audit.Actor, action, targetType, id string, before, after map[string]any) error {
	err := audit.Record(ctx, s.db, audit.Entry{
		Action: action, Actor: actor, Target: audit.Target{Type: targetType, ID: id},
		Before: before, After: after,
	})
	return err
}
