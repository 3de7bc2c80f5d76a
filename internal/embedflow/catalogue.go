package embedflow

import "sort"

// Catalogue is every UI string of the embedded flows by translation key.
// Form labels use keys of the form account.attributes.<label>-name (spec
// 2.6); a host overrides any of them with theme.strings, and labels it does
// not override keep this wording.
var Catalogue = map[string]string{
	"account.attributes.subject-name":       "Subject",
	"account.attributes.studentLevel-name":  "Student level",
	"account.attributes.duration-name":      "Duration (minutes)",
	"account.attributes.taxonomy-name":      "Taxonomy",
	"account.attributes.questionTypes-name": "Question types",
	"account.attributes.language-name":      "Language",
	"account.attributes.prompt-name":        "Question",
	"account.attributes.config-name":        "Configuration (JSON)",
	"account.attributes.points-name":        "Points",
	"account.attributes.type-name":          "Type",
	"account.attributes.answer-name":        "Your answer",
	"account.attributes.files-name":         "Upload a file",
	"account.attributes.score-name":         "Score",
	"account.attributes.feedback-name":      "Feedback",
	"embed.generate.title":                  "Generate an exam",
	"embed.generate.submit":                 "Generate exam",
	"embed.generate.progress":               "Generating your exam…",
	"embed.generate.ready":                  "Your exam is ready.",
	"embed.generate.examId":                 "Exam:",
	"embed.generate.stepAsked":              "Your request was received",
	"embed.generate.stepWriting":            "Writing the questions",
	"embed.generate.stepReady":              "Exam ready to edit",
	"embed.generate.edit":                   "Open the exam in the editor",
	"embed.generate.failed":                 "The exam could not be generated. Try again, perhaps with a more specific subject or other question types.",
	"embed.generate.details":                "Technical details",
	"embed.generate.retry":                  "Try again",
	"embed.authoring.title":                 "Edit exam",
	"embed.authoring.add":                   "Add question",
	"embed.authoring.save":                  "Save",
	"embed.authoring.delete":                "Delete",
	"embed.authoring.moveUp":                "Move up",
	"embed.authoring.moveDown":              "Move down",
	"embed.authoring.moved":                 "Question moved to position",
	"embed.authoring.drag":                  "Reorder question",
	"embed.authoring.orderHelp":             "Drag a question by its handle, or focus the handle and press the up or down arrow key to move it.",
	"embed.authoring.confirmDelete":         "Delete this question?",
	"embed.authoring.advanced":              "Advanced: edit as JSON",
	"embed.authoring.useJSON":               "Save the JSON below instead of the fields above",
	"embed.authoring.onePerLine":            "(one per line)",
	"embed.authoring.chooseType":            "Choose",
	"embed.authoring.quality":               "Quality findings",
	"embed.authoring.regenerate":            "Regenerate",
	"embed.authoring.exportQTI":             "Export (QTI 3.0)",
	"embed.authoring.exportJSON":            "Export (JSON)",
	"embed.authoring.instructions":          "Instructions for the new version (optional)",
	"embed.regenerate.title":                "Regenerate question",
	"embed.regenerate.progress":             "Writing a new version…",
	"embed.regenerate.current":              "Current version",
	"embed.regenerate.proposal":             "Proposed version",
	"embed.regenerate.accept":               "Use the new version",
	"embed.regenerate.back":                 "Back to the exam",
	"embed.student.title":                   "Exam",
	"embed.student.submit":                  "Submit answers",
	"embed.student.submitted":               "Your answers were submitted.",
	"embed.student.confirm":                 "Submit your answers? You cannot change them afterwards.",
	"embed.student.answered":                "Answered",
	"embed.student.timeLeft":                "Time left",
	"embed.student.timeUp":                  "Time is up: submitting your answers…",
	"embed.student.saved":                   "Your answers are saved.",
	"embed.student.unsavable":               "An answer holds a character that cannot be saved (a NUL character or broken text encoding). Remove it and try again.",
	"embed.student.tooLong":                 "Your answers are too long to be saved. Shorten the longest and try again.",
	"embed.student.previous":                "Previous",
	"embed.student.next":                    "Next",
	"embed.student.upload":                  "Upload",
	"embed.student.uploaded":                "Your files",
	"embed.student.noFiles":                 "No file uploaded yet.",
	"embed.student.remove":                  "Remove",
	"embed.student.fileTypes":               "Accepted file types:",
	"embed.student.fileTypesAll":            "images, PDF, plain text",
	"embed.student.fileSize":                "Largest file:",
	"embed.student.fileCountLabel":          "Files:",
	"embed.student.fileTooLarge":            "This file is too large. Files may be at most",
	"embed.student.fileType":                "This type of file is not accepted here. Accepted types:",
	"embed.student.fileCount":               "No more files can be added to this answer. Remove one first; the most it takes is",
	"embed.student.fileMissing":             "Choose a file to upload first.",
	"embed.student.filesPending":            "Your uploaded files that are not submitted yet have reached the most you may keep:",
	"embed.attempt.closed":                  "Time is up: this answer was not saved. The answers you saved before are kept.",
	"embed.attempt.submitted":               "These answers were already submitted: this change was not saved.",
	"embed.attempt.discarded":               "The time ran out before these answers were submitted, so this attempt was closed without a result.",
	"embed.attempt.unavailable":             "This exam cannot be taken now",
	"embed.attempt.notOpen":                 "This exam is not open yet. It opens on",
	"embed.attempt.assignmentClosed":        "This exam is closed: the time to take it is over.",
	"embed.attempt.exhausted":               "You have used every attempt you have at this exam.",
	"embed.results.correctAnswer":           "Correct answer",
	"embed.results.title":                   "Your result",
	"embed.results.grading":                 "Your answers are being graded…",
	"embed.results.total":                   "Total",
	"embed.results.question":                "Question",
	"embed.results.points":                  "Points",
	"embed.results.feedback":                "Feedback",
	"embed.results.noAnswer":                "No answer",
	"embed.answer.true":                     "True",
	"embed.answer.false":                    "False",
	"embed.results.pending":                 "Being graded",
	"embed.expired.title":                   "This session has expired",
	"embed.expired.body":                    "Ask the app you came from to open it again.",
	"embed.devtools.translationKeys":        "Translation keys",
	"embed.devtools.language":               "Language",
	"embed.questionTypes.multiple_choice":   "Multiple choice",
	"embed.questionTypes.multiple_select":   "Multiple select",
	"embed.questionTypes.file_upload":       "File upload",
	"embed.questionTypes.true_false":        "True or false",
	"embed.questionTypes.short_text":        "Short text",
	"embed.questionTypes.numeric":           "Numeric",
	"embed.questionTypes.essay":             "Essay",
}

// Keys returns the catalogue's keys in order.
func Keys() []string {
	keys := make([]string, 0, len(Catalogue))
	for k := range Catalogue {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Strings resolves translation keys for one session: the host's overrides
// first, the catalogue's wording otherwise.
type Strings map[string]string

// T returns the text of key.
func (s Strings) T(key string) string {
	if v, ok := s[key]; ok {
		return v
	}
	return Catalogue[key]
}
