package llm

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesProvider is the OpenAI Responses API. It does not stream: the
// answer's text is shown when it is complete. Nothing is stored at
// OpenAI (store: false); the conversation is sent whole each time.
type responsesProvider struct {
	client openai.Client
	model  string
}

func openaiOptions(cfg Config) []option.RequestOption {
	// The key is always set explicitly: the one read for this provider.
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return opts
}

func newResponses(cfg Config) *responsesProvider {
	return &responsesProvider{client: openai.NewClient(openaiOptions(cfg)...), model: cfg.Model}
}

func (p *responsesProvider) Name() string  { return OpenAI }
func (p *responsesProvider) Model() string { return p.model }

// Complete asks for one response.
func (p *responsesProvider) Complete(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	params := responses.ResponseNewParams{
		Model:           p.model,
		Input:           responses.ResponseNewParamsInputUnion{OfInputItemList: responsesInput(req.Messages)},
		Tools:           responsesTools(req.Tools),
		MaxOutputTokens: openai.Int(maxTokens(req)),
		Store:           openai.Bool(false),
	}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	res, err := p.client.Responses.New(ctx, params)
	if err != nil {
		return Reply{}, fmt.Errorf("openai: %w", err)
	}
	out := Reply{Usage: Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}}
	if res.Status == responses.ResponseStatusIncomplete {
		return out, fmt.Errorf("openai: %w", ErrCutOff)
	}
	for _, item := range res.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				if c.Type == "output_text" {
					out.Text += c.Text
				}
			}
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: item.CallID, Name: item.Name, Arguments: argumentsOrEmpty(item.Arguments.OfString)})
		}
	}
	if onText != nil && out.Text != "" {
		onText(out.Text)
	}
	return out, nil
}

func responsesInput(ms []Message) responses.ResponseInputParam {
	var out responses.ResponseInputParam
	for _, m := range ms {
		switch m.Role {
		case RoleUser:
			out = append(out, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleUser))
		case RoleAssistant:
			if m.Text != "" {
				out = append(out, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range m.ToolCalls {
				out = append(out, responses.ResponseInputItemParamOfFunctionCall(string(c.Arguments), c.ID, c.Name))
			}
		case RoleTool:
			for _, r := range m.Results {
				item := responses.ResponseInputItemParamOfFunctionCallOutput(r.Text)
				item.OfFunctionCallOutput.CallID = openai.String(r.CallID)
				out = append(out, item)
			}
		}
	}
	return out
}

func responsesTools(tools []Tool) []responses.ToolUnionParam {
	var out []responses.ToolUnionParam
	for _, t := range tools {
		u := responses.ToolParamOfFunction(t.Name, t.Schema, false)
		if t.Description != "" {
			u.OfFunction.Description = openai.String(t.Description)
		}
		out = append(out, u)
	}
	return out
}
