// Package ids makes and checks the platform's opaque, type-prefixed ids.
//
// An id is a prefix such as "usr_" followed by a ULID: 48 bits of
// millisecond time and 80 random bits. Ids sort by creation time, which
// gives cursor pagination a stable order for free.
package ids

import (
	"strings"

	"github.com/oklog/ulid/v2"
)

// Prefix is the type marker at the start of an id.
type Prefix string

// The id prefixes of API.md.
const (
	Org            Prefix = "org_"
	User           Prefix = "usr_"
	APIKey         Prefix = "key_"
	Client         Prefix = "cli_"
	Folder         Prefix = "fld_"
	Exam           Prefix = "exm_"
	Question       Prefix = "qst_"
	QuestionType   Prefix = "qtp_"
	Result         Prefix = "res_"
	Audit          Prefix = "aud_"
	Generation     Prefix = "gen_"
	Embed          Prefix = "emb_"
	ServiceAccount Prefix = "sva_"
	// ServiceAccountKey names a service account's key: the "kid" of the
	// assertions it signs.
	ServiceAccountKey Prefix = "sak_"
	Regeneration      Prefix = "rgn_"
	Scan              Prefix = "scn_"
	Import            Prefix = "imp_"
	// Webhooks: endpoints, their delivery attempts and the events
	// (messages, the webhook-id header).
	WebhookEndpoint Prefix = "whe_"
	WebhookDelivery Prefix = "whd_"
	WebhookMessage  Prefix = "msg_"
	// Delivery: classes (rosters), assignments and students' attempts.
	Class      Prefix = "cls_"
	Assignment Prefix = "asg_"
	Attempt    Prefix = "att_"
	// LTIPlatform is a registered LTI 1.3 platform (an LMS).
	LTIPlatform Prefix = "ltp_"
)

// New returns a fresh id with prefix p.
func New(p Prefix) string { return string(p) + ulid.Make().String() }

// Valid reports whether s is a well-formed id with prefix p.
func Valid(p Prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, string(p))
	if !ok || len(rest) != ulid.EncodedSize {
		return false
	}
	_, err := ulid.ParseStrict(rest)
	return err == nil
}
