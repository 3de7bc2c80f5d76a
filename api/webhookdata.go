package api

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/tenancy"
)

// WebhookData renders the resource of a webhook event exactly as the API
// returns it (event.Encoder): the same conversion and JSON options as the
// resource's GET.
func WebhookData(resource any) (json.RawMessage, error) {
	var m proto.Message
	switch r := resource.(type) {
	case tenancy.User:
		m = userToProto(r)
	case assessment.Result:
		m = resultToProto(r)
	case generation.Generation:
		m = generationToProto(r)
	case regeneration.Regeneration:
		m = regenerationToProto(r)
	case scanning.Scan:
		m = scanToProto(r)
	case delivery.Attempt:
		m = attemptToProto(r)
	default:
		return nil, fmt.Errorf("no API form for %T", resource)
	}
	return marshalCompact(m)
}
