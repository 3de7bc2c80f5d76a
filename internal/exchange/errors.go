package exchange

import (
	"fmt"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Reasons of the errors import returns; all have kind errs.KindInvalid and
// name the request field "file".
const (
	// ReasonTooLarge: the body, an entry, the sum of the entries or their
	// number exceeds the Limits.
	ReasonTooLarge = "IMPORT_TOO_LARGE"
	// ReasonNotPackage: the body is neither a zip archive nor JSON.
	ReasonNotPackage = "IMPORT_NOT_A_PACKAGE"
	// ReasonUnsafePath: an archive entry names a path outside the package.
	ReasonUnsafePath = "IMPORT_UNSAFE_PATH"
	// ReasonForbiddenXML: an XML document declares a DTD or entities.
	ReasonForbiddenXML = "IMPORT_XML_FORBIDDEN"
	// ReasonMalformed: the package or document is not well formed or lacks
	// what its format requires (a manifest, a known schema, ...).
	ReasonMalformed = "IMPORT_MALFORMED"
)

// importField is the request field import errors name: the body or the
// multipart field "file" of POST /exam-imports.
const importField = "file"

func importError(reason, format string, args ...any) *errs.Error {
	return &errs.Error{Kind: errs.KindInvalid, Reason: reason, Field: importField,
		Message: importField + ": " + fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) *errs.Error {
	return importError(ReasonTooLarge, format, args...)
}

func malformed(format string, args ...any) *errs.Error {
	return importError(ReasonMalformed, format, args...)
}
