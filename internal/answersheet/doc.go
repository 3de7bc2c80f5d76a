// Package answersheet prints paper answer sheets for an exam and reads them
// back from scans or phone photos, without AI.
//
// A sheet is an A4 page with four corner marks, a QR code naming the exam,
// the student, the page and the layout it was printed with, a row of bubbles
// per choice question and a box per written answer. [ComputeLayout] is the one
// description of where everything is; [Render] draws it and [Reader] reads it,
// so the two cannot drift apart. Reading finds the corner marks, maps the page
// through a perspective transform, decodes the QR code, scores each bubble
// against the page's own blank-bubble and ink levels, and crops the written
// boxes as PNG images for a vision model.
//
// [DecodeImage] and [SplitPDF] turn uploads into page images with size,
// pixel-count and page-count limits. PDF pages are rasterized by the
// poppler-utils programs pdfinfo and pdftoppm, which must be installed where
// scans are processed.
package answersheet
