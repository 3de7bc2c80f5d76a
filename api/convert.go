package api

import (
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/tenancy"
)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// toStruct renders a JSON-shaped map; values that cannot be represented
// (which the domain never stores) are dropped rather than failing a read.
func toStruct(m map[string]any) *structpb.Struct {
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(m))}
	for k, v := range m {
		if pv, err := structpb.NewValue(v); err == nil {
			s.Fields[k] = pv
		}
	}
	return s
}

// fromStruct returns the plain JSON values of s; JSON null becomes nil.
func fromStruct(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	m := make(map[string]any, len(s.Fields))
	for k, v := range s.Fields {
		m[k] = v.AsInterface()
	}
	return m
}

func optionalStruct(m map[string]any) *structpb.Struct {
	if m == nil {
		return nil
	}
	return toStruct(m)
}

func userToProto(u tenancy.User) *v1.User {
	return &v1.User{
		Id: u.ID, OrgId: u.OrgID, Email: u.Email, Name: u.Name, Role: string(u.Role),
		Metadata: toStruct(u.Metadata), CreatedAt: ts(u.CreatedAt), UpdatedAt: ts(u.UpdatedAt),
	}
}

func orgToProto(o tenancy.Org) *v1.Org {
	return &v1.Org{
		Id: o.ID, Name: o.Name, Country: o.Country, Plan: o.Plan,
		Settings:  &v1.OrgSettings{AiRegion: o.AIRegion},
		CreatedAt: ts(o.CreatedAt), UpdatedAt: ts(o.UpdatedAt),
	}
}

func auditToProto(e audit.Entry) *v1.AuditLogEntry {
	return &v1.AuditLogEntry{
		Id: e.ID, Action: e.Action,
		Actor:   &v1.AuditActor{Kind: e.Actor.Kind, Id: e.Actor.ID, ClientId: e.Actor.ClientID},
		Target:  &v1.AuditTarget{Type: e.Target.Type, Id: e.Target.ID},
		Session: e.Session, Reason: e.Reason,
		Before: optionalStruct(e.Before), After: optionalStruct(e.After),
		Origin: e.Origin, CreatedAt: ts(e.CreatedAt),
	}
}
