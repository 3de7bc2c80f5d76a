package workflows

import (
	"errors"
	"testing"
)

func TestRegionTaskQueue(t *testing.T) {
	for region, want := range map[string]string{"eu": "grading-eu", "global": "grading-global"} {
		if got, err := RegionTaskQueue(region); got != want || err != nil {
			t.Errorf("RegionTaskQueue(%q) = %q, %v; want %q", region, got, err, want)
		}
	}
	for _, region := range []string{"", "us", "EU"} {
		if got, err := RegionTaskQueue(region); !errors.Is(err, ErrUnknownRegion) || got != "" {
			t.Errorf("RegionTaskQueue(%q) = %q, %v; want ErrUnknownRegion", region, got, err)
		}
	}
}
