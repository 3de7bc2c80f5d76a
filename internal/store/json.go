package store

import (
	"database/sql/driver"
	"encoding/json"
	"reflect"
)

// JSON is a query parameter holding V encoded as JSON text. Write its
// placeholder with an explicit cast ($n::jsonb): in the exec query mode
// (the one a transaction-pooling PgBouncer needs) pgx cannot encode a Go
// map or slice for a parameter whose type it does not know, and a []byte
// would be sent as bytea. A nil V, map, slice or pointer is SQL NULL.
type JSON struct{ V any }

// Value implements driver.Valuer.
func (j JSON) Value() (driver.Value, error) {
	if j.V == nil {
		return nil, nil
	}
	switch v := reflect.ValueOf(j.V); v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
	}
	b, err := json.Marshal(j.V)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
