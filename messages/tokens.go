package messages

import "time"

// Bearer tokens for remote mode (HTTP). A token is printed once, when it
// is issued; the server keeps only its SHA-256, in the user's
// journal-backed state. A token is named everywhere else (journal, logs,
// lists, revoke) by its id.

// IssueTokenRequest issues a new bearer token for User. The server makes
// the id and the token (ID and Token are never read from the wire).
// Answer: *TokenIssued.
type IssueTokenRequest struct {
	User string `json:"user"`
	// ID and Token are set by the server (actors.System.Submit), never by
	// the sender: a client cannot choose a token.
	ID    string `json:"-"`
	Token string `json:"-"`
}

// RevokeTokenRequest revokes the token named ID. User is found by the
// server from the id (never read from the wire). Answer: *TokenList (the
// user's tokens after the change).
type RevokeTokenRequest struct {
	ID   string `json:"id"`
	User string `json:"-"`
}

// ListTokensRequest lists a user's tokens (ids and status, never a
// token). Answer: *TokenList.
type ListTokensRequest struct {
	User string `json:"user"`
}

// CommandName implements Command.
func (*IssueTokenRequest) CommandName() string  { return "admin.token.issue" }
func (*RevokeTokenRequest) CommandName() string { return "admin.token.revoke" }
func (*ListTokensRequest) CommandName() string  { return "admin.token.list" }

// TargetUser implements UserCommand.
func (c *IssueTokenRequest) TargetUser() string  { return c.User }
func (c *RevokeTokenRequest) TargetUser() string { return c.User }
func (c *ListTokensRequest) TargetUser() string  { return c.User }

// TokenIssued answers IssueTokenRequest: the only place the token ever
// appears. It is shown once and cannot be shown again.
type TokenIssued struct {
	ID    string `json:"id"`
	Token string `json:"token"`
	User  string `json:"user"`
}

// TokenList answers ListTokensRequest and RevokeTokenRequest.
type TokenList struct {
	User   string         `json:"user"`
	Tokens []TokenSummary `json:"tokens"`
	// Changed is true when the command changed state (and was journaled).
	Changed bool `json:"changed"`
}

// TokenSummary is one token as lists show it: never the token or its hash.
type TokenSummary struct {
	ID        string    `json:"id"`
	IssuedAt  time.Time `json:"issued_at"`
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// TokenIssuedEvent is journaled as token_issued: the token's id and the
// hex SHA-256 of the token, never the token.
type TokenIssuedEvent struct {
	ID     string    `json:"id"`
	User   string    `json:"user"`
	SHA256 string    `json:"sha256"`
	At     time.Time `json:"at"`
}

// TokenRevokedEvent is journaled as token_revoked.
type TokenRevokedEvent struct {
	ID   string    `json:"id"`
	User string    `json:"user"`
	At   time.Time `json:"at"`
}

// TokenIDPrefix starts every token id: "tok_" and 16 hex digits.
const TokenIDPrefix = "tok_"

// TokenPrefix starts every bearer token, so a leaked one is recognisable
// (secret scanners) and a token id is never mistaken for a token.
const TokenPrefix = "gxt_"
