package tenancy

import (
	"unicode/utf8"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Metadata bounds (documented in docs/decisions/0003-user-metadata.md).
const (
	MaxMetadataKeys     = 50
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 500
)

// Metadata is a user's free-form map of string keys to scalar values.
type Metadata map[string]any

// MetadataPatch is a metadata change: set keys to scalars, or to nil to
// remove them.
type MetadataPatch map[string]any

// validateMetadataEntry checks one key and its (non-nil) value.
func validateMetadataEntry(key string, v any) error {
	field := "metadata." + key
	if key == "" {
		return errs.Invalid("metadata", "keys must not be empty")
	}
	if utf8.RuneCountInString(key) > MaxMetadataKeyLen {
		return errs.Invalid(field, "keys must be at most %d characters", MaxMetadataKeyLen)
	}
	switch v := v.(type) {
	case string:
		if utf8.RuneCountInString(v) > MaxMetadataValueLen {
			return errs.Invalid(field, "string values must be at most %d characters", MaxMetadataValueLen)
		}
	case float64, bool:
	default:
		return errs.Invalid(field, "values must be a string, number or boolean; nested objects and arrays are not allowed")
	}
	return nil
}

// Apply merges p into m and returns the result; m is not modified. Keys
// set to nil are removed.
func (m Metadata) Apply(p MetadataPatch) (Metadata, error) {
	out := make(Metadata, len(m)+len(p))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			if k == "" {
				return nil, errs.Invalid("metadata", "keys must not be empty")
			}
			delete(out, k)
			continue
		}
		if err := validateMetadataEntry(k, v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	if len(out) > MaxMetadataKeys {
		return nil, errs.Invalid("metadata", "must have at most %d keys", MaxMetadataKeys)
	}
	return out, nil
}
