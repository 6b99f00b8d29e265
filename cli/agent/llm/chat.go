package llm

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// chatProvider is Chat Completions, streamed, against an OpenAI-compatible
// server (llama.cpp, Ollama, vLLM) at --base-url.
type chatProvider struct {
	chat  openai.ChatService
	model string
}

// newChat builds the Chat Completions service alone, not through
// openai.NewClient: the client would read the OPENAI_* environment (the
// organisation, the project, custom headers) and send it to a server that
// is not OpenAI. Only --base-url and GX_AGENT_API_KEY (when set) are used.
func newChat(cfg Config) *chatProvider {
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &chatProvider{chat: openai.NewChatService(opts...), model: cfg.Model}
}

func (p *chatProvider) Name() string  { return OpenAICompatible }
func (p *chatProvider) Model() string { return p.model }

// Complete streams one chat completion and accumulates it.
func (p *chatProvider) Complete(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	params := openai.ChatCompletionNewParams{
		Model:         p.model,
		Messages:      chatMessages(req),
		Tools:         chatTools(req.Tools),
		MaxTokens:     openai.Int(maxTokens(req)),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	stream := p.chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if onText != nil && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			onText(chunk.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		return Reply{}, fmt.Errorf("chat completions: %w", err)
	}
	out := Reply{Usage: Usage{InputTokens: acc.Usage.PromptTokens, OutputTokens: acc.Usage.CompletionTokens}}
	if len(acc.Choices) > 0 && acc.Choices[0].FinishReason == "length" {
		return out, fmt.Errorf("chat completions: %w", ErrCutOff)
	}
	if len(acc.Choices) > 0 {
		m := acc.Choices[0].Message
		out.Text = m.Content
		for _, c := range m.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: argumentsOrEmpty(c.Function.Arguments)})
		}
	}
	return out, nil
}

func chatMessages(req Request) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			out = append(out, openai.UserMessage(m.Text))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Arguments)},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			for _, r := range m.Results {
				out = append(out, openai.ToolMessage(r.Text, r.CallID))
			}
		}
	}
	return out
}

func chatTools(tools []Tool) []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, t := range tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.Schema)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(fd))
	}
	return out
}
