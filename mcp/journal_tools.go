package mcp

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// get_my_journal: the caller's own recent journal records (docs/tools.md),
// newest first, compact (D61).
//
// Records come from the server's in-memory index (the last 500 records or
// 256 KiB of each user, tool_call records left out); older ones stay in the
// journal for `guarded-exchange journal dump`. Each record is shown as its
// seq, time, type, actor and channel plus the few fields of its payload
// that say what happened, picked per record type from a fixed list. What
// is never shown: sealed keys, token hashes, argument hashes, the stored
// answers of order_outcome, and any field a record type does not list.
// Text that came from the exchange (a venue order id, status or symbol that
// fails its strict check, a client order id of a venue_update row, the
// permission names of a key check or of a refusal for a changed key) goes
// into untrusted_text, referenced by
// number, exactly as in the account tools (untrusted.go).
//
// Paging: next_cursor is this server's signed cursor (cursor.go) bound to
// the tool and the user, holding the seq to continue below.

// Limits of get_my_journal.
const (
	journalDefaultLimit = 20
	journalMaxLimit     = 100
	journalTool         = "get_my_journal"
	// journalRecordsBudget bounds the rendered records of one answer, in
	// bytes; with untrusted_text (at most untrustedBudget) and the rest
	// the answer stays under 20,000 characters. A page cut by it ends with
	// a next_cursor right after its last record.
	journalRecordsBudget = 14000
	// journalMaxRows bounds the order rows shown of one venue_update.
	journalMaxRows = 20
)

var (
	journalCursorPattern = regexp.MustCompile(`^before=[1-9][0-9]{0,19}$`)
	// ownIDPattern is an id or name this server made (action ids, client
	// order ids of its own attempts, credential and token ids, codes).
	ownIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	// detailKeyPattern is a refusal detail's key that may be shown.
	detailKeyPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
)

// journalTools lists get_my_journal; it signs its cursors with the same
// key as the account tools.
func (s *server) journalTools() []*tool {
	j := &journalReader{s: s, cursors: newCursorSigner(s.opts.CursorKey)}
	return []*tool{{
		name:  journalTool,
		title: "Get my journal",
		description: "Your own recent journal records, newest first: orders, refusals, stream updates, kill switch and policy changes. " +
			"Page with next_cursor. Exchange text is in untrusted_text.",
		kind:   KindRead,
		schema: inputSchema[journalArgs](),
		handle: j.get,
	}}
}

type journalReader struct {
	s       *server
	cursors *cursorSigner
}

type journalOut struct {
	Venue         string           `json:"venue"`
	User          string           `json:"user"`
	Records       []map[string]any `json:"records"`
	HasMore       bool             `json:"has_more"`
	NextCursor    string           `json:"next_cursor,omitempty"`
	Omitted       int              `json:"omitted,omitempty"`
	UntrustedText string           `json:"untrusted_text,omitempty"`
	Notice        string           `json:"notice,omitempty"`
}

func (j *journalReader) get(_ context.Context, c *call) (any, error) {
	limit := c.args.integer("limit", journalDefaultLimit, 1, journalMaxLimit)
	raw := c.args.str("cursor", false, nil, "")
	if err := c.args.done(); err != nil {
		return nil, err
	}
	scope := cursorScope{Tool: journalTool, User: c.principal.User}
	var before uint64
	if raw != "" {
		inner, e := j.cursors.open(raw, scope)
		if e != nil || !journalCursorPattern.MatchString(inner) {
			return nil, journalCursorError()
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(inner, "before="), 10, 64)
		if err != nil {
			return nil, journalCursorError()
		}
		before = n
	}
	page := j.s.opts.Backend.MyJournal(c.principal.User, before, limit)
	out := journalOut{Venue: j.s.opts.Venue, User: c.principal.User, Records: make([]map[string]any, 0, len(page.Entries))}
	var ut untrustedText
	size, shown, cut := 0, 0, false
	for i := range page.Entries {
		m := ut.mark()
		r, ok := renderRecord(&page.Entries[i], &ut)
		if ok {
			b, err := json.Marshal(r)
			if err != nil {
				ok = false
				ut.rollback(m)
			} else if size+len(b) > journalRecordsBudget && len(out.Records) > 0 {
				ut.rollback(m)
				cut = true
				break
			} else {
				size += len(b)
			}
		}
		shown = i + 1
		if !ok {
			out.Omitted++
			continue
		}
		out.Records = append(out.Records, r)
	}
	out.UntrustedText = ut.String()
	if (page.More || cut) && shown > 0 {
		next, ok := j.cursors.issue(scope, "before="+strconv.FormatUint(page.Entries[shown-1].Seq, 10))
		out.HasMore, out.NextCursor = ok, next
	}
	if cut {
		out.Notice = "this page holds fewer records than the limit to keep the answer small; next_cursor continues right after them"
	}
	if !out.HasMore && !cut && page.Evicted {
		out.Notice = "older records are no longer kept in memory; they stay in the journal, where an operator can read them (`guarded-exchange journal dump --user " + c.principal.User + "`)"
	}
	return out, nil
}

// journalCursorError is the one refusal for a bad cursor; the value is
// never echoed.
func journalCursorError() *messages.Error {
	e := messages.InvalidParams("cursor", cursorReason)
	e.NextStep = "pass next_cursor exactly as the previous get_my_journal answer gave it, or omit cursor to start from the newest record"
	return e
}

// renderRecord shows one record; ok is false when its payload cannot be
// read as the record type says (the record is then only counted).
func renderRecord(e *messages.JournalEntry, ut *untrustedText) (map[string]any, bool) {
	out := map[string]any{"seq": e.Seq, "time": rfc3339(e.Time), "type": e.Type.String(), "actor": e.Actor}
	if e.Channel != "" && ownIDPattern.MatchString(e.Channel) {
		out["channel"] = e.Channel
	}
	put := func(k, v string) {
		if v != "" && ownIDPattern.MatchString(v) {
			out[k] = v
		}
	}
	var ok bool
	switch e.Type {
	case messages.RecordOrderAttempt:
		var p messages.OrderAttemptEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("action_id", p.ActionID)
			put("client_order_id", p.ClientOrderID)
			put("tool", p.Tool)
			put("category", string(p.Category))
			put("symbol", p.Symbol)
			put("environment", p.Environment)
			put("idempotency_key", p.IdempotencyKey)
			if decimalFits(p.NotionalUSDT) {
				out["notional_usdt"] = p.NotionalUSDT.String()
			}
			out["risk_increasing"], out["confirmed"] = p.RiskIncreasing, p.Confirmed
		}
	case messages.RecordOrderOutcome:
		var p messages.OrderOutcomeEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("action_id", p.ActionID)
			put("client_order_id", p.ClientOrderID)
			put("status", p.Status)
			put("result_source", p.ResultSource)
			if p.VenueStatus != "" {
				var rc rowCheck
				if v := rc.oneOf(orderStatuses, p.VenueStatus); !rc.bad {
					out["venue_status"] = v
				} else if n := ut.add("venue_status", p.VenueStatus); n > 0 {
					out["venue_status_ref"] = n
				}
			}
			if p.ReleaseKey {
				out["release_key"] = true
			}
		}
	case messages.RecordOrderRefused:
		var p struct {
			Tool     string         `json:"tool"`
			Category string         `json:"category"`
			Symbol   string         `json:"symbol"`
			Code     string         `json:"code"`
			Details  map[string]any `json:"details"`
		}
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("tool", p.Tool)
			put("category", p.Category)
			put("symbol", p.Symbol)
			put("code", p.Code)
			if raw, has := p.Details["offending"]; has {
				// The exchange's permission names (a key whose
				// permissions changed): exchange text, never a detail.
				delete(p.Details, "offending")
				list, _ := raw.([]any)
				names := make([]string, 0, len(list))
				for _, x := range list {
					if s, isStr := x.(string); isStr {
						names = append(names, s)
					}
				}
				permissionsRef(out, "offending", names, ut)
			}
			if d := scalarDetails(p.Details); len(d) > 0 {
				out["details"] = d
			}
		}
	case messages.RecordOrderRepeat:
		var p messages.OrderRepeatEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("tool", p.Tool)
			put("idempotency_key", p.IdempotencyKey)
			put("client_order_id", p.ClientOrderID)
			put("reason", p.Reason)
		}
	case messages.RecordVenueUpdate:
		var p messages.VenueUpdateEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			orders := p.Orders
			if len(orders) > journalMaxRows {
				out["orders_not_shown"] = len(orders) - journalMaxRows
				orders = orders[:journalMaxRows]
			}
			rows, omitted := venueUpdateRows(orders, ut)
			out["orders"] = rows
			if omitted > 0 {
				out["orders_omitted"] = omitted
			}
		}
	case messages.RecordVenueAnomaly:
		var p messages.VenueAnomalyEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("kind", p.Kind)
			put("source", p.Source)
			put("client_order_id", p.ClientOrderID)
			put("category", string(p.Category))
			put("symbol", p.Symbol)
			put("field", p.Field)
			out["count"] = p.Count
		}
	case messages.RecordKillSwitchOn, messages.RecordKillSwitchOff:
		var p messages.KillSwitchEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("before", string(p.Before))
			put("after", string(p.After))
		}
	case messages.RecordPolicyCeilingSet, messages.RecordPolicyTightened, messages.RecordPolicyOverridesReset:
		var p struct {
			Fields []string `json:"fields"`
		}
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			fields := []string{}
			for _, f := range p.Fields {
				if messages.IsFieldName(f) {
					fields = append(fields, f)
				}
			}
			out["fields"] = fields
		}
	case messages.RecordCredentialAdded:
		var p messages.CredentialAddedEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("credential_id", p.CredentialID)
			put("environment", p.Environment)
			put("fingerprint", p.Fingerprint)
			out["read_only_cap"] = p.ReadOnlyCap
			permissionsRef(out, "permissions", p.Permissions, ut)
		}
	case messages.RecordCredentialChecked, messages.RecordCredentialRejected:
		var p messages.CredentialCheckedEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("credential_id", p.CredentialID)
			put("environment", p.Environment)
			put("fingerprint", p.Fingerprint)
			out["accepted"], out["read_only_cap"] = p.Accepted, p.ReadOnlyCap
			permissionsRef(out, "permissions", p.Permissions, ut)
			permissionsRef(out, "offending", p.Offending, ut)
		}
	case messages.RecordCredentialDeleted:
		var p messages.CredentialDeletedEvent
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("credential_id", p.CredentialID)
			put("environment", p.Environment)
		}
	case messages.RecordTokenIssued, messages.RecordTokenRevoked:
		var p struct {
			ID string `json:"id"`
		}
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			put("token_id", p.ID) // never the token's hash
		}
	default:
		// A type without its own rendering (user_created, user_disabled,
		// and any record type added later) shows its envelope and the
		// plain identifiers it names, nothing else.
		var p map[string]any
		if ok = json.Unmarshal(e.Payload, &p) == nil; ok {
			for _, k := range []string{"action_id", "confirmation_id", "client_order_id", "tool", "category", "symbol", "status", "reason", "channel"} {
				if v, isStr := p[k].(string); isStr {
					put(k, v)
				}
			}
		}
	}
	return out, ok
}

// scalarDetails keeps the refusal details that are plain values this
// server wrote: booleans, numbers, short identifiers or decimals, and
// lists of those; anything else is left out.
func scalarDetails(d map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range d {
		if !detailKeyPattern.MatchString(k) {
			continue
		}
		if s, ok := scalarDetail(v); ok {
			out[k] = s
			continue
		}
		if list, isList := v.([]any); isList && len(list) <= 20 {
			vals := make([]any, 0, len(list))
			for _, x := range list {
				if s, ok := scalarDetail(x); ok {
					vals = append(vals, s)
				}
			}
			if len(vals) == len(list) {
				out[k] = vals
			}
		}
	}
	return out
}

func scalarDetail(v any) (any, bool) {
	switch x := v.(type) {
	case bool, float64:
		return x, true
	case string:
		if ownIDPattern.MatchString(x) {
			return x, true
		}
	}
	return nil, false
}

// permissionsRef puts a list of exchange permission names into
// untrusted_text as one entry (the names are the exchange's words).
func permissionsRef(out map[string]any, field string, names []string, ut *untrustedText) {
	if len(names) == 0 {
		return
	}
	if n := ut.add(field, strings.Join(names, ",")); n > 0 {
		out[field+"_ref"] = n
	}
}

// venueUpdateRow is one order of a venue_update as shown.
type venueUpdateRow struct {
	OrderID          string `json:"order_id"`
	Category         string `json:"category"`
	Symbol           string `json:"symbol"`
	Side             string `json:"side"`
	Status           string `json:"status"`
	Qty              string `json:"qty"`
	CumExecQty       string `json:"cum_exec_qty"`
	AvgPrice         string `json:"avg_price,omitempty"`
	Origin           string `json:"origin"`
	ClientOrderIDRef int    `json:"client_order_id_ref,omitempty"`
}

// venueUpdateRows shows the rows that pass the account tools' strict
// checks; the others are counted.
func venueUpdateRows(rows []messages.VenueOrderMark, ut *untrustedText) ([]venueUpdateRow, int) {
	out := make([]venueUpdateRow, 0, len(rows))
	omitted := 0
	for _, m := range rows {
		var v rowCheck
		r := venueUpdateRow{
			OrderID:    v.match(venueIDPattern, m.OrderID),
			Category:   v.oneOf([]string{string(messages.CategorySpot), string(messages.CategoryLinear)}, string(m.Category)),
			Symbol:     v.match(symbolPattern, m.Symbol),
			Side:       v.oneOf(sides, m.Side),
			Status:     v.oneOf(orderStatuses, m.Status),
			Qty:        v.dec(m.Qty),
			CumExecQty: v.dec(m.CumExecQty),
			AvgPrice:   v.optDec(m.AvgPrice),
			Origin:     v.oneOf([]string{messages.OriginSystem, messages.OriginExternal}, m.Origin),
		}
		if v.bad {
			omitted++
			continue
		}
		r.ClientOrderIDRef = ut.add("client_order_id", m.ClientOrderID)
		out = append(out, r)
	}
	return out, omitted
}
