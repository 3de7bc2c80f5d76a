package store_test

import (
	"context"
	"testing"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

func TestJSONParametersEncodeInExecMode(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	var nilMap map[string]any
	for _, tc := range []struct {
		in   any
		want *string
	}{
		{map[string]any{"a": 1.5, "b": []any{"x"}}, ptr(`{"a": 1.5, "b": ["x"]}`)},
		{[]string{"x", "y"}, ptr(`["x", "y"]`)},
		{"text", ptr(`"text"`)},
		{nilMap, nil},
		{nil, nil},
	} {
		var got *string
		if err := db.Unscoped().QueryRow(ctx, `SELECT $1::jsonb::text`, store.JSON{V: tc.in}).Scan(&got); err != nil {
			t.Fatalf("%#v: %v", tc.in, err)
		}
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%#v stored as %v, want %v", tc.in, deref(got), deref(tc.want))
		}
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
