package devenv

import (
	"context"
	"io"
	"testing"

	"go.temporal.io/sdk/client"
)

func TestStartTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	tmp, err := StartTemporal(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Stop()
	c, err := DialTemporal(tmp.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CheckHealth(context.Background(), &client.CheckHealthRequest{}); err != nil {
		t.Fatalf("dev server unhealthy: %v", err)
	}
}
