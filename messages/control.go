package messages

import "encoding/json"

// MaxControlLine is the longest line the control socket reads (docs/commands.md "The control socket"):
// 64 KiB. A longer line is refused and the connection closed.
const MaxControlLine = 64 << 10

// ControlVersion is the version of the control socket's line protocol.
// Every request carries it in `v`; a request without `v`, or with another
// version, is refused with invalid_params on field "v" (docs/decisions.md).
// Every answer carries the version of the server that wrote it.
const ControlVersion = 1

// ControlRequest is one line on the control socket: the protocol version, a
// command's wire name and its JSON body.
type ControlRequest struct {
	V    int             `json:"v"`
	ID   string          `json:"id,omitempty"`
	Type string          `json:"type"`
	Body json.RawMessage `json:"body,omitempty"`
}

// ControlResponse answers one ControlRequest: Result on success, Error (the
// docs/errors.md shape) on refusal.
type ControlResponse struct {
	V      int             `json:"v"`
	ID     string          `json:"id,omitempty"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}
