package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// activityLine is the log line of one tool call, the activity log a person
// reads to see what the agent did: the tool, the user, the outcome code,
// how long it took and the ids the answer carries. It never holds an
// argument value: arguments may carry anything the model wrote (the
// journal keeps only their digest too).
type activityLine struct {
	tool    string // a tool of the registry, or "(unknown)"
	user    string
	tokenID string
	start   time.Time
}

// activityIDs are the fields of an answer copied into its log line when
// they look like ids this server or the venue made.
var activityIDs = []string{"confirmation_id", "client_order_id", "order_id", "action_id"}

// log writes the line at info level: outcome is "ok" or the error code,
// status the answer's own status (pending, filled, ...) when it has one.
func (l *activityLine) log(logger *slog.Logger, res sdk.Result, err error) {
	if !logger.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := []any{"tool", l.tool, "user", l.user}
	if l.tokenID != "" {
		attrs = append(attrs, "token_id", l.tokenID)
	}
	outcome := "ok"
	var body answerFields
	switch r := res.(type) {
	case *sdk.CallToolResult:
		if raw, ok := r.StructuredContent.(json.RawMessage); ok && json.Valid(raw) {
			body = answerFieldsOf(raw)
		}
		switch {
		case r.IsError:
			outcome = idOrWord(body.get("code"), "error")
		case r.NeedsInput():
			outcome = "input_required"
		}
	case nil:
		// No answer: a JSON-RPC error, or a handler that panicked (the
		// panic becomes an internal_error answer further out).
		outcome = "internal_error"
		if err != nil {
			outcome = "protocol_error"
		}
	}
	attrs = append(attrs, "outcome", outcome)
	if st, ok := body.get("status").(string); ok && ownIDPattern.MatchString(st) {
		attrs = append(attrs, "status", st)
	}
	for _, k := range activityIDs {
		if v, ok := body.get(k).(string); ok && ownIDPattern.MatchString(v) {
			attrs = append(attrs, k, v)
		}
	}
	for _, k := range []string{"request_id", "limit"} {
		if v, ok := body.get("details." + k).(string); ok && ownIDPattern.MatchString(v) {
			attrs = append(attrs, k, v)
		}
	}
	attrs = append(attrs, "duration_ms", time.Since(l.start).Milliseconds())
	logger.Info("tool call", attrs...)
}

// answerFields are the string members of an answer the activity line may
// copy: code, status, the ids of activityIDs, and details.request_id and
// details.limit ("details." names those), read without decoding the rest
// of the answer (a posture or a page of orders is large).
type answerFields map[string]string

func (f answerFields) get(name string) any {
	if v, ok := f[name]; ok {
		return v
	}
	return nil
}

// answerFieldsOf reads the answerFields of raw (valid JSON). A member
// named twice keeps its last value, as a decoder does.
func answerFieldsOf(raw []byte) answerFields {
	out := answerFields{}
	keep := func(prefix, name string, v []byte) {
		if s, ok := jsonString(v); ok {
			out[prefix+name] = s
		} else {
			delete(out, prefix+name)
		}
	}
	eachMember(raw, func(name string, v []byte) {
		switch name {
		case "code", "status", "confirmation_id", "client_order_id", "order_id", "action_id":
			keep("", name, v)
		case "details":
			delete(out, "details.request_id")
			delete(out, "details.limit")
			eachMember(v, func(name string, v []byte) {
				if name == "request_id" || name == "limit" {
					keep("details.", name, v)
				}
			})
		}
	})
	return out
}

// idOrWord is v when it is a short id-like string, else word.
func idOrWord(v any, word string) string {
	if s, ok := v.(string); ok && ownIDPattern.MatchString(s) {
		return s
	}
	return word
}
