package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Tool is one tool offered to the model: a server's tools/list entry,
// name, description and JSON Schema of the arguments, as listed.
type Tool struct {
	Name        string
	Description string
	Schema      map[string]any
}

// ToolCall is the model's request to call a tool.
type ToolCall struct {
	// ID is the provider's id of the call, echoed with its result.
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolResult is what a tool call answered, in the text the model reads.
type ToolResult struct {
	CallID  string
	Name    string
	Text    string
	IsError bool
}

// Role says who a message is from.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries the results of the assistant's previous tool calls.
	RoleTool Role = "tool"
)

// Message is one message of the conversation: the user's text, the
// assistant's text and tool calls, or the results of those calls.
type Message struct {
	Role      Role
	Text      string
	ToolCalls []ToolCall
	Results   []ToolResult
}

// Request is one completion request: the system prompt, the conversation
// so far and the tools the model may call.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
	// MaxTokens bounds the answer; 0 is DefaultMaxTokens.
	MaxTokens int64
}

// DefaultMaxTokens bounds an answer when the request does not.
const DefaultMaxTokens = 2048

// ErrCutOff is an answer the provider cut off at the token bound: its
// text or tool call may be half written, so it is no decision. Complete
// returns it with the answer's usage (the tokens are paid for) and
// nothing else.
var ErrCutOff = errors.New("the answer was cut off at the token bound")

// Usage is the tokens one completion used, as the provider counted them.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// Reply is the model's answer: text, tool calls, or both.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
}

// Provider is a language model behind one API.
type Provider interface {
	// Name is the provider's name as given to --provider.
	Name() string
	// Model is the model asked.
	Model() string
	// Complete asks for the next assistant message. onText, when not nil,
	// receives the answer's text as it streams (providers that do not
	// stream call it once with the whole text). An answer cut off at the
	// token bound is ErrCutOff, with the reply's usage.
	Complete(ctx context.Context, req Request, onText func(string)) (Reply, error)
}

// Provider names.
const (
	Anthropic        = "anthropic"
	OpenAI           = "openai"
	OpenAICompatible = "openai-compatible"
	Fake             = "fake"
)

// Names lists the providers, for help texts.
var Names = []string{Anthropic, OpenAI, OpenAICompatible, Fake}

// Environment variables that hold the API keys, one per provider.
const (
	EnvAnthropicKey = "ANTHROPIC_API_KEY"
	EnvOpenAIKey    = "OPENAI_API_KEY"
	// EnvCompatibleKey is the key for an OpenAI-compatible server. It is
	// never OPENAI_API_KEY: a key for OpenAI is not sent to another host.
	EnvCompatibleKey = "GX_AGENT_API_KEY"
)

// KeyEnv returns the environment variable that holds provider's key, or
// "" for a provider that needs none.
func KeyEnv(provider string) string {
	switch provider {
	case Anthropic:
		return EnvAnthropicKey
	case OpenAI:
		return EnvOpenAIKey
	case OpenAICompatible:
		return EnvCompatibleKey
	}
	return ""
}

// DefaultModels are the models used when --model is not given.
var DefaultModels = map[string]string{
	Anthropic:        "claude-sonnet-4-5",
	OpenAI:           "gpt-5-mini",
	OpenAICompatible: "local",
	Fake:             FakeRefuse,
}

// Config selects and configures a provider.
type Config struct {
	Provider string
	Model    string
	// BaseURL replaces the provider's API address (required for
	// openai-compatible, e.g. http://127.0.0.1:8080/v1).
	BaseURL string
	// APIKey is the key read from the environment; never printed.
	APIKey string
	// HTTPClient is the client the SDK uses; nil is its default.
	HTTPClient *http.Client
}

// New returns the provider cfg names. Its errors never show the API key
// or the credentials in the base URL.
func New(cfg Config) (Provider, error) {
	p, err := newProvider(cfg)
	if err != nil {
		return nil, err
	}
	return withRedaction(p, cfg), nil
}

func newProvider(cfg Config) (Provider, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultModels[cfg.Provider]
	}
	switch cfg.Provider {
	case Anthropic:
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("the anthropic provider needs %s in the environment", EnvAnthropicKey)
		}
		return newAnthropic(cfg), nil
	case OpenAI:
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("the openai provider needs %s in the environment", EnvOpenAIKey)
		}
		return newResponses(cfg), nil
	case OpenAICompatible:
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("the openai-compatible provider needs --base-url (e.g. http://127.0.0.1:8080/v1)")
		}
		return newChat(cfg), nil
	case Fake:
		return NewFake(cfg.Model)
	}
	return nil, fmt.Errorf("unknown provider %q (one of anthropic, openai, openai-compatible, fake)", cfg.Provider)
}

// argumentsOrEmpty is the call's arguments, or {} when the model sent none.
func argumentsOrEmpty(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}
