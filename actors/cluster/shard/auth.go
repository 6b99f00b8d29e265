package shard

// Authenticated calls (docs/cluster.md "Security"; docs/decisions.md
// D195–D197): every call a Client sends and every answer a host gives is
// sealed with an HMAC-SHA256 keyed by the cluster's call key, a sub-key of
// the master key every member holds. A host opens the call before it
// serves it and refuses one whose authenticator is missing or wrong; a
// Client opens the answer and refuses one that is not the answer to its
// own call.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// sealMagic starts a sealed call or answer: a version tag, then the
// authenticator, then the call's (answer's) bytes.
const sealMagic = "gxa1"

// macSize is the length of an authenticator (HMAC-SHA256).
const macSize = sha256.Size

// MinCallKeySize is the shortest call key NewKind and WithCallKey accept.
const MinCallKeySize = 32

// ReasonCallNotAuthenticated is details.reason of a host's refusal of a
// call whose authenticator is missing or wrong (code permission_denied):
// the call was not served.
const ReasonCallNotAuthenticated = "call_not_authenticated"

// ReasonAnswerNotAuthenticated is details.reason of a Client's refusal of
// an answer whose authenticator is missing or wrong (code
// internal_error): the call may or may not have been served.
const ReasonAnswerNotAuthenticated = "answer_not_authenticated"

// callMAC is the authenticator of call bytes b sent to shard n: a call
// sealed for one shard does not open on another.
func callMAC(key []byte, n int, b []byte) []byte { return callMACOf(key, strconv.Itoa(n), b) }

// callMACOf is callMAC by the activation's identity (the shard number in
// decimal, as the transport looks it up).
func callMACOf(key []byte, identity string, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("call\x00" + identity + "\x00"))
	m.Write(b)
	return m.Sum(nil)
}

// answerMAC is the authenticator of answer bytes b to the call whose
// authenticator is call: an answer is bound to its own call.
func answerMAC(key, call, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("answer\x00"))
	m.Write(call)
	m.Write(b)
	return m.Sum(nil)
}

func seal(mac, b []byte) []byte {
	out := make([]byte, 0, len(sealMagic)+macSize+len(b))
	out = append(out, sealMagic...)
	out = append(out, mac...)
	return append(out, b...)
}

// unseal splits sealed bytes into authenticator and payload.
func unseal(sealed []byte) (mac, b []byte, ok bool) {
	if len(sealed) < len(sealMagic)+macSize || string(sealed[:len(sealMagic)]) != sealMagic {
		return nil, nil, false
	}
	return sealed[len(sealMagic) : len(sealMagic)+macSize], sealed[len(sealMagic)+macSize:], true
}

// SealCall seals call bytes b for shard n with key: what a Client sends.
func SealCall(key []byte, n int, b []byte) []byte { return seal(callMAC(key, n, b), b) }

// OpenCall checks sealed call bytes for shard n against key and returns
// the call and its authenticator; ok is false when the authenticator is
// missing or wrong (then nothing of the call may be used).
func OpenCall(key []byte, n int, sealed []byte) (b, mac []byte, ok bool) {
	return openCall(key, strconv.Itoa(n), sealed)
}

func openCall(key []byte, identity string, sealed []byte) (b, mac []byte, ok bool) {
	mac, b, ok = unseal(sealed)
	if !ok || len(key) < MinCallKeySize || !hmac.Equal(mac, callMACOf(key, identity, b)) {
		return nil, nil, false
	}
	return b, mac, true
}

// SealAnswer seals answer bytes b to the call whose authenticator is
// callMAC: what a host answers to a call it opened.
func SealAnswer(key, callMAC, b []byte) []byte { return seal(answerMAC(key, callMAC, b), b) }

// OpenAnswer checks sealed answer bytes against key and the call's
// authenticator and returns the answer.
func OpenAnswer(key, callMAC, sealed []byte) (b []byte, ok bool) {
	mac, b, ok := unseal(sealed)
	if !ok || !hmac.Equal(mac, answerMAC(key, callMAC, b)) {
		return nil, false
	}
	return b, true
}

// NotAuthenticated is a host's answer to a call it could not open. It
// names no part of the call.
func NotAuthenticated() *messages.Error {
	return &messages.Error{
		Code:     messages.CodePermissionDenied,
		Message:  "the shard refused the call: it does not carry this cluster's authenticator; the call was not served",
		NextStep: "check that every member holds the cluster's master key",
		Details:  map[string]any{"reason": ReasonCallNotAuthenticated},
	}
}

func answerNotAuthenticated() *messages.Error {
	return &messages.Error{
		Code:     messages.CodeInternalError,
		Message:  "the shard's answer does not carry this cluster's authenticator; the call may or may not have been served",
		NextStep: "check get_my_journal before repeating a change; check that the cluster network is private",
		Details:  map[string]any{"reason": ReasonAnswerNotAuthenticated},
	}
}

// openAnswer is the Client's side: an answer that opens, or a host's
// unsealed refusal of the call (a host answers a call it could not open
// without an authenticator: it has no call to bind one to), or an error.
func openAnswer(key, mac, out []byte) ([]byte, *messages.Error) {
	if b, ok := OpenAnswer(key, mac, out); ok {
		return b, nil
	}
	var a answer
	if json.Unmarshal(out, &a) == nil && a.Error != nil && a.Error.Code == messages.CodePermissionDenied &&
		a.Error.Details["reason"] == ReasonCallNotAuthenticated {
		// Trusting an unsealed refusal gives a forger only a failed call,
		// which dropping the answer gives as well.
		return nil, NotAuthenticated()
	}
	return nil, answerNotAuthenticated()
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithCallKey has the Client seal every call with key (the cluster's
// call key, docs/cluster.md "Security") and refuse every answer not
// sealed to its call. A key shorter than MinCallKeySize is an error of
// each call.
func WithCallKey(key []byte) ClientOption {
	return func(c *Client) { c.key = bytes.Clone(key) }
}

// errNoKey is the cause of a call made with too short a key.
var errNoKey = errors.New("shard: the call key is missing or shorter than 32 bytes")
