// Command benchexchange measures exporting and importing a 1,000-question
// exam (package exchange: a QTI 3.0 package and the native document), per
// question: time and peak heap above the live heap before the operation.
// The baseline, measured in the same run, is encoding/json marshalling and
// unmarshalling the same questions.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/exchange"
)

func main() {
	n := flag.Int("questions", 1000, "questions in the exam")
	rounds := flag.Int("n", 5, "measured rounds per operation")
	flag.Parse()
	if err := run(*n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "benchexchange:", err)
		os.Exit(1)
	}
}

// questions cycles through one question of each rule-scored and AI-graded
// built-in type.
func questions(n int) []assessment.Question {
	sample := []assessment.Question{
		{Type: assessment.TypeMultipleChoice, Points: 2, Prompt: "Which planet is the largest in the solar system?", Config: map[string]any{
			"options": []any{map[string]any{"id": "a", "text": "Mars"}, map[string]any{"id": "b", "text": "Jupiter", "correct": true}, map[string]any{"id": "c", "text": "Venus"}}}},
		{Type: assessment.TypeMultipleSelect, Points: 1, Prompt: "Which of these numbers are prime?", Config: map[string]any{
			"options": []any{map[string]any{"id": "a", "text": "2", "correct": true}, map[string]any{"id": "b", "text": "3", "correct": true}, map[string]any{"id": "c", "text": "4"}}}},
		{Type: assessment.TypeTrueFalse, Points: 1, Prompt: "Water boils at 100 °C at sea level.", Config: map[string]any{"correct": true}},
		{Type: assessment.TypeShortText, Points: 1, Prompt: "What is the capital of France?", Config: map[string]any{"acceptedAnswers": []any{"Paris"}}},
		{Type: assessment.TypeNumeric, Points: 1, Prompt: "What is pi to two decimals?", Config: map[string]any{"correct": 3.14, "tolerance": 0.01}},
		{Type: assessment.TypeEssay, Points: 5, Prompt: "Explain photosynthesis in your own words.", Config: map[string]any{"rubric": "Mentions light, water and CO2."}},
	}
	qs := make([]assessment.Question, n)
	for i := range qs {
		qs[i] = sample[i%len(sample)]
		qs[i].ID = fmt.Sprintf("qst_%05d", i)
		qs[i].Position = i + 1
		qs[i].Revision = 1
	}
	return qs
}

// measure runs op rounds times and returns the median time and the
// largest heap growth seen while it ran (sampled every 100 µs).
func measure(rounds int, op func() error) (time.Duration, uint64, error) {
	var times []time.Duration
	var peak uint64
	for range rounds {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		var high atomic.Uint64
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			var s runtime.MemStats
			for {
				runtime.ReadMemStats(&s)
				if s.HeapAlloc > base && s.HeapAlloc-base > high.Load() {
					high.Store(s.HeapAlloc - base)
				}
				select {
				case <-done:
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
		}()
		start := time.Now()
		err := op()
		times = append(times, time.Since(start))
		close(done)
		<-sampled
		if err != nil {
			return 0, 0, err
		}
		peak = max(peak, high.Load())
	}
	slices.Sort(times)
	return times[len(times)/2], peak, nil
}

func run(n, rounds int) error {
	qs := questions(n)
	doc := exchange.NewDocument(assessment.Exam{ID: "exm_bench", Name: "Bench", Language: "en", DurationMinutes: 60}, qs)
	var pkg, native bytes.Buffer
	if err := exchange.WriteQTI(&pkg, doc); err != nil {
		return err
	}
	if err := exchange.WriteNative(&native, doc); err != nil {
		return err
	}
	marshalled, err := json.Marshal(qs)
	if err != nil {
		return err
	}
	ops := []struct {
		name string
		op   func() error
	}{
		{"baseline json.Marshal", func() error { _, err := json.Marshal(qs); return err }},
		{"baseline json.Unmarshal", func() error { var out []assessment.Question; return json.Unmarshal(marshalled, &out) }},
		{"export qti3 (streamed)", func() error { return exchange.WriteQTI(io.Discard, doc) }},
		{"export json (streamed)", func() error { return exchange.WriteNative(io.Discard, doc) }},
		{"import qti3", func() error {
			_, err := exchange.Import(bytes.NewReader(pkg.Bytes()), exchange.DefaultLimits)
			return err
		}},
		{"import json", func() error {
			_, err := exchange.Import(bytes.NewReader(native.Bytes()), exchange.DefaultLimits)
			return err
		}},
	}
	fmt.Printf("exchange, %d questions, median of %d rounds; QTI package %d KiB, native document %d KiB\n",
		n, rounds, pkg.Len()>>10, native.Len()>>10)
	fmt.Printf("%-26s %12s %14s %16s %10s\n", "operation", "µs/question", "× marshal", "peak heap B/q", "× marshal")
	var baseTime time.Duration
	var basePeak uint64
	for i, o := range ops {
		d, peak, err := measure(rounds, o.op)
		if err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
		if i == 0 {
			baseTime, basePeak = d, max(peak, 1)
		}
		fmt.Printf("%-26s %12.2f %14.1f %16d %10.1f\n", o.name, float64(d.Microseconds())/float64(n),
			float64(d)/float64(baseTime), peak/uint64(n), float64(peak)/float64(basePeak))
	}
	return nil
}
