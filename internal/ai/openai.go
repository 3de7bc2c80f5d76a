package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// OpenAIConfig configures a client of an OpenAI-compatible chat-completions
// API (OpenAI, Azure OpenAI, Mistral, vLLM, Ollama).
type OpenAIConfig struct {
	// BaseURL is the API root without the operation, e.g.
	// https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token; it never appears in errors.
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// HTTPClient makes the requests; nil means a client with
	// DefaultOpenAITimeout.
	HTTPClient *http.Client
}

// DefaultOpenAITimeout bounds one chat-completions call when
// OpenAIConfig.HTTPClient is nil. Grading a long essay with files can take
// a while, but a hung connection must not hold an activity forever.
const DefaultOpenAITimeout = 2 * time.Minute

// maxResponseBytes bounds how much of a provider response is read: a grade
// or fifty questions fit easily.
const maxResponseBytes = 4 << 20

type openAI struct {
	endpoint string
	apiKey   string
	model    string
	client   *http.Client
}

// NewOpenAI returns a Provider speaking the OpenAI chat-completions API with
// JSON-schema response formats.
func NewOpenAI(cfg OpenAIConfig) Provider {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultOpenAITimeout}
	}
	return &openAI{
		endpoint: strings.TrimSuffix(cfg.BaseURL, "/") + "/chat/completions",
		apiKey:   cfg.APIKey,
		model:    cfg.Model,
		client:   client,
	}
}

var _ Provider = (*openAI)(nil)

// Wire types of the chat-completions API, limited to what assessd sends and
// reads.
type (
	chatRequest struct {
		Model          string         `json:"model"`
		Messages       []chatMessage  `json:"messages"`
		ResponseFormat responseFormat `json:"response_format"`
		Temperature    float64        `json:"temperature"`
	}
	chatMessage struct {
		Role    string `json:"role"`
		Content any    `json:"content"` // a string or []contentPart
	}
	contentPart struct {
		Type     string    `json:"type"`
		Text     string    `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
		File     *filePart `json:"file,omitempty"`
	}
	imageURL struct {
		URL string `json:"url"`
	}
	filePart struct {
		Filename string `json:"filename"`
		FileData string `json:"file_data"`
	}
	responseFormat struct {
		Type       string     `json:"type"`
		JSONSchema jsonSchema `json:"json_schema"`
	}
	jsonSchema struct {
		Name   string         `json:"name"`
		Strict bool           `json:"strict"`
		Schema map[string]any `json:"schema"`
	}
	chatResponse struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
				Refusal string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	errorResponse struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
)

// complete sends one chat-completions request with a strict JSON-schema
// response format and decodes the first choice's content into out.
func (o *openAI) complete(ctx context.Context, system string, user []contentPart, format jsonSchema, out any) error {
	body, err := json.Marshal(chatRequest{
		Model: o.model,
		Messages: []chatMessage{
			{Role: "system", Content: system},
			{Role: "user", Content: user},
		},
		ResponseFormat: responseFormat{Type: "json_schema", JSONSchema: format},
		Temperature:    0,
	})
	if err != nil {
		return invalidf("encode request: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return invalidf("build request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.apiKey)

	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("ai: openai: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("ai: openai: read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode, data)
	}

	var chat chatResponse
	if err := json.Unmarshal(data, &chat); err != nil {
		return fmt.Errorf("ai: openai: malformed response: %w", err)
	}
	if len(chat.Choices) == 0 {
		return errors.New("ai: openai: response has no choices")
	}
	msg := chat.Choices[0].Message
	if msg.Refusal != "" {
		// A refusal at temperature 0 may still differ on another attempt
		// or model version; the caller's retry budget bounds it.
		return fmt.Errorf("ai: openai: model refused: %s", truncate(msg.Refusal, 200))
	}
	if err := json.Unmarshal(withoutNUL([]byte(msg.Content)), out); err != nil {
		return fmt.Errorf("ai: openai: malformed %s output: %w", format.Name, err)
	}
	return nil
}

// withoutNUL replaces every NUL character of a JSON document's strings and
// keys with U+FFFD. What a model writes is stored as text and jsonb, which
// cannot hold NUL: one in a feedback would fail every attempt to record
// the grade. In JSON a NUL can only be the escape \u0000; escapes are read
// pairwise, so an escaped backslash followed by "u0000" stays text.
func withoutNUL(doc []byte) []byte {
	if !bytes.Contains(doc, []byte(`\u0000`)) {
		return doc
	}
	out := make([]byte, 0, len(doc))
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' || i+1 == len(doc) {
			out = append(out, doc[i])
			continue
		}
		if bytes.HasPrefix(doc[i:], []byte(`\u0000`)) {
			out = append(out, `\ufffd`...)
			i += len(`\u0000`) - 1
			continue
		}
		out = append(out, doc[i], doc[i+1]) // an escape: its character is never one to look at
		i++
	}
	return out
}

// statusError maps a non-200 status: 408, 429 and 5xx are transient, any
// other 4xx wraps ErrInvalidRequest. Only the provider's error message is
// kept, truncated, because the body could echo parts of the request.
func statusError(status int, body []byte) error {
	var e errorResponse
	msg := ""
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = ": " + truncate(e.Error.Message, 200)
	}
	if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
		return fmt.Errorf("%w: openai: status %d%s", ErrInvalidRequest, status, msg)
	}
	return fmt.Errorf("ai: openai: status %d%s", status, msg)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
