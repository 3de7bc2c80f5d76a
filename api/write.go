package api

import (
	"net/http"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
)

// httpStatus is the REST status of each Connect code, as Vanguard maps it.
var httpStatus = map[connect.Code]int{
	connect.CodeCanceled:           499,
	connect.CodeUnknown:            http.StatusInternalServerError,
	connect.CodeInvalidArgument:    http.StatusBadRequest,
	connect.CodeDeadlineExceeded:   http.StatusGatewayTimeout,
	connect.CodeNotFound:           http.StatusNotFound,
	connect.CodeAlreadyExists:      http.StatusConflict,
	connect.CodePermissionDenied:   http.StatusForbidden,
	connect.CodeResourceExhausted:  http.StatusTooManyRequests,
	connect.CodeFailedPrecondition: http.StatusBadRequest,
	connect.CodeAborted:            http.StatusConflict,
	connect.CodeOutOfRange:         http.StatusBadRequest,
	connect.CodeUnimplemented:      http.StatusNotImplemented,
	connect.CodeInternal:           http.StatusInternalServerError,
	connect.CodeUnavailable:        http.StatusServiceUnavailable,
	connect.CodeDataLoss:           http.StatusInternalServerError,
	connect.CodeUnauthenticated:    http.StatusUnauthorized,
}

// WriteError writes ce as the REST transcoder does: its HTTP status, its
// metadata as headers, and a google.rpc.Status JSON body. Middleware that
// answers before the transcoder (authentication, body limits) uses it so
// every error has one shape.
func WriteError(w http.ResponseWriter, _ *http.Request, ce *connect.Error) {
	WriteErrorStatus(w, httpStatus[ce.Code()], ce)
}

// WriteErrorStatus is WriteError with an explicit HTTP status, for the
// few statuses Connect codes do not distinguish (413).
func WriteErrorStatus(w http.ResponseWriter, code int, ce *connect.Error) {
	st := &status.Status{Code: int32(ce.Code()), Message: ce.Message()}
	for _, d := range ce.Details() {
		st.Details = append(st.Details, &anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
	}
	data, err := protojson.Marshal(st)
	body, err := appendCompact(nil, data, err)
	if err != nil {
		body = []byte(`{"code":13,"message":"internal error"}`)
	}
	for k, vs := range ce.Meta() {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
