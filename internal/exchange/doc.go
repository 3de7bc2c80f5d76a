// Package exchange converts exams between assessd's domain content and the
// formats schools move content in: the lossless native JSON document
// ("assessd.exam/v1") and IMS QTI content packages (writing QTI 3.0,
// reading QTI 3.0 and 2.1).
//
// Export writes straight to an io.Writer. Import reads a bounded body into a
// neutral Plan (the exam, its questions and the custom question types they
// need) plus a warning for every item it cannot represent; creating the
// content is the caller's job, inside one transaction. Hostile input is
// refused early with an *errs.Error of kind KindInvalid whose Reason is one
// of the Reason constants, so the API answers 400 without leaking details.
//
// The mapping of each built-in type to QTI is documented in docs/qti.md;
// the rules for custom types in decisions 0070 to 0074.
package exchange
