package llm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider is the Anthropic Messages API, streamed.
type anthropicProvider struct {
	client anthropic.Client
	model  string
}

func newAnthropic(cfg Config) *anthropicProvider {
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), model: cfg.Model}
}

func (p *anthropicProvider) Name() string  { return Anthropic }
func (p *anthropicProvider) Model() string { return p.model }

// Complete streams one message and accumulates it.
func (p *anthropicProvider) Complete(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	params := anthropic.MessageNewParams{
		Model:     p.model,
		MaxTokens: maxTokens(req),
		Messages:  anthropicMessages(req.Messages),
		Tools:     anthropicTools(req.Tools),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return Reply{}, fmt.Errorf("anthropic stream: %w", err)
		}
		if onText != nil && ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
			onText(ev.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil {
		return Reply{}, fmt.Errorf("anthropic: %w", err)
	}
	out := Reply{Usage: Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens}}
	if msg.StopReason == anthropic.StopReasonMaxTokens {
		return out, fmt.Errorf("anthropic: %w", ErrCutOff)
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Text += b.Text
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: argumentsOrEmpty(string(b.Input))})
		}
	}
	return out, nil
}

func maxTokens(req Request) int64 {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return DefaultMaxTokens
}

func anthropicMessages(ms []Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	for _, m := range ms {
		switch m.Role {
		case RoleUser:
			out = append(out, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Text)))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				var input any = map[string]any{}
				_ = json.Unmarshal(c.Arguments, &input)
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) > 0 {
				out = append(out, anthropic.NewAssistantMessage(blocks...))
			}
		case RoleTool:
			var blocks []anthropic.ContentBlockParamUnion
			for _, r := range m.Results {
				blocks = append(blocks, anthropic.NewToolResultBlock(r.CallID, r.Text, r.IsError))
			}
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	return out
}

func anthropicTools(tools []Tool) []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	for _, t := range tools {
		schema := anthropic.ToolInputSchemaParam{Properties: t.Schema["properties"], ExtraFields: map[string]any{}}
		for k, v := range t.Schema {
			switch k {
			case "type", "properties":
			case "required":
				if req, ok := v.([]any); ok {
					for _, r := range req {
						if s, ok := r.(string); ok {
							schema.Required = append(schema.Required, s)
						}
					}
				} else if req, ok := v.([]string); ok {
					schema.Required = req
				}
			default:
				schema.ExtraFields[k] = v
			}
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return out
}
