package ai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/assessd/assessd/internal/ai"
)

// box is a PNG of an answer box: white, with a written stroke when ink.
func box(t *testing.T, ink bool) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 300, 90))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	if ink {
		for x := 40; x < 200; x++ {
			img.SetGray(x, 45+x%7, color.Gray{20})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestBuiltinTranscribeTellsBlankFromWritten(t *testing.T) {
	p := ai.NewBuiltin()
	blank, err := p.Transcribe(context.Background(), ai.TranscribeRequest{Image: box(t, false)})
	if err != nil || !blank.Blank || blank.Confidence != 1 {
		t.Fatalf("blank box: %+v, %v", blank, err)
	}
	written, err := p.Transcribe(context.Background(), ai.TranscribeRequest{Image: box(t, true)})
	if err != nil || written.Blank || written.Text != "" || written.Confidence != 0 {
		t.Fatalf("written box: %+v, %v (want no text, confidence 0: a person reads it)", written, err)
	}
	if _, err := p.Transcribe(context.Background(), ai.TranscribeRequest{Image: []byte("no png")}); !errors.Is(err, ai.ErrInvalidRequest) {
		t.Fatalf("not a PNG: %v", err)
	}
}

func TestOpenAITranscribeSendsTheBoxAsAnImage(t *testing.T) {
	s := newChatServer(t, 200, completion(t, map[string]any{"text": "3,14", "blank": false, "confidence": 1.7}))
	p := ai.NewOpenAI(ai.OpenAIConfig{BaseURL: s.URL, APIKey: testKey, Model: "vision"})
	img := box(t, true)
	got, err := p.Transcribe(context.Background(), ai.TranscribeRequest{Region: "eu", QuestionType: "numeric", Prompt: "What is pi?", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "3,14" || got.Confidence != 1 {
		t.Fatalf("transcription %+v (confidence clamped to 1)", got)
	}
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			JSONSchema struct{ Name string } `json:"json_schema"`
		} `json:"response_format"`
	}
	s.mu.Lock()
	body := s.body
	s.mu.Unlock()
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(req.Messages[1].Content, &parts); err != nil {
		t.Fatal(err)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	if req.ResponseFormat.JSONSchema.Name != "transcription" || len(parts) != 2 || parts[0].Type != "text" ||
		!bytes.Contains([]byte(parts[0].Text), []byte("What is pi?")) || parts[1].Type != "image_url" || parts[1].ImageURL.URL != want {
		t.Fatalf("request %s", body)
	}
}
