package exchange_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/exchange"
)

// largeDocument is a 1,000-question exam cycling through the sample's
// questions.
func largeDocument(n int) exchange.Document {
	exam, sample := sampleExam()
	qs := make([]assessment.Question, n)
	for i := range qs {
		qs[i] = sample[i%len(sample)]
		qs[i].ID = fmt.Sprintf("qst_%05d", i)
		qs[i].Position = i + 1
	}
	return exchange.NewDocument(exam, qs)
}

// BenchmarkQTI1000 measures exporting and importing a 1,000-question exam
// as a QTI package, per question.
func BenchmarkQTI1000(b *testing.B) {
	const n = 1000
	doc := largeDocument(n)
	pkg := exportQTI(b, doc)
	b.Run("export", func(b *testing.B) {
		perQuestion(b, n, func() {
			if err := exchange.WriteQTI(io.Discard, doc); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(len(pkg))/n, "package-B/question")
	})
	b.Run("import", func(b *testing.B) {
		perQuestion(b, n, func() {
			p, err := exchange.Import(bytes.NewReader(pkg), exchange.DefaultLimits)
			if err != nil || len(p.Questions) != n {
				b.Fatalf("imported %d questions: %v", len(p.Questions), err)
			}
		})
	})
}

// BenchmarkNative1000 measures the native document both ways.
func BenchmarkNative1000(b *testing.B) {
	const n = 1000
	doc := largeDocument(n)
	var buf bytes.Buffer
	if err := exchange.WriteNative(&buf, doc); err != nil {
		b.Fatal(err)
	}
	body := buf.Bytes()
	b.Run("export", func(b *testing.B) {
		perQuestion(b, n, func() {
			if err := exchange.WriteNative(io.Discard, doc); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("import", func(b *testing.B) {
		perQuestion(b, n, func() {
			if _, err := exchange.Import(bytes.NewReader(body), exchange.DefaultLimits); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// perQuestion runs op in the benchmark loop and reports its time and
// allocated bytes per question of the exam.
func perQuestion(b *testing.B, n int, op func()) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/question")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/question")
}
