package mcp

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The requestState of a confirmation form (MRTR, protocol 2026-07-28).
//
// The state travels through the client and comes back on the repeated
// call; it is attacker-controlled on the way back (docs/tools.md "Confirmation").
// It is sealed with AES-256-GCM under a sub-key of the master key, so the
// client can neither read nor change it, and a server restart between the
// two rounds is harmless: the sub-key derives again from the same master
// key, and the confirmation it names is rebuilt by the user actor from the
// journal. The sealed payload binds the answer to
//   - the principal (user and bearer token id),
//   - the tool and a digest of the call's parsed arguments (the repeated
//     call must be the same call),
//   - the confirmation id and the user actor's own argument digest,
//   - the environment (venue) the confirmation was parked on: a server
//     restarted on another venue refuses the answer (the user actor
//     refuses it as well, and cancels the confirmation: venue_changed),
//   - an expiry (the confirmation's).
//
// Single use is the user actor's: a confirmation is decided once, so a
// replayed state finds it no longer pending and nothing happens.

// requestStateLabel is the HKDF info of the sub-key; a new format takes a
// new label, so old states stop opening.
const requestStateLabel = "gx requestState v1"

// requestStatePrefix marks the format version on the wire.
const requestStatePrefix = "gx1."

// maxRequestState bounds what the server decodes: a sealed state is a few
// hundred bytes.
const maxRequestState = 2048

// RequestStateKey derives the requestState sub-key from the master key
// (HKDF-SHA256, info "gx requestState v1"). Pass the result as
// Options.StateKey: the same master key gives the same sub-key after a
// restart, so a form answered across a restart still opens.
func RequestStateKey(masterKey []byte) ([]byte, error) {
	if len(masterKey) < 16 {
		return nil, errors.New("mcp: master key too short")
	}
	return hkdf.Key(sha256.New, masterKey, nil, requestStateLabel, 32)
}

// formState is the sealed content of a confirmation form's requestState.
type formState struct {
	V              int    `json:"v"`
	User           string `json:"u"`
	TokenID        string `json:"k,omitempty"`
	Tool           string `json:"t"`
	CallDigest     string `json:"d"`
	ConfirmationID string `json:"c"`
	ActorDigest    string `json:"a"`
	// Env is the environment the confirmation was parked on.
	Env string `json:"n"`
	// Expires is the confirmation's expiry, Unix milliseconds.
	Expires int64 `json:"e"`
}

// stateSealer seals and opens form states. It holds no mutable state and
// is safe for concurrent use.
type stateSealer struct {
	aead cipher.AEAD
	now  func() time.Time
}

func newStateSealer(key []byte, now func() time.Time) (*stateSealer, error) {
	if len(key) != 32 {
		return nil, errors.New("mcp: the request state key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &stateSealer{aead: aead, now: now}, nil
}

// seal returns the wire form of st: prefix, then base64url of a random
// nonce and the AES-GCM ciphertext (the label as associated data).
func (s *stateSealer) seal(st formState) (string, error) {
	st.V = 1
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, plain, []byte(requestStateLabel))
	return requestStatePrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Reasons of a refused request state (details.reason of invalid_params,
// field requestState). They are stable and never echo the state.
const (
	stateReasonInvalid = "is not a confirmation form state of this server"
	stateReasonForeign = "belongs to another principal or another call"
	stateReasonExpired = "has expired; the confirmation can no longer be approved"
	stateReasonVenue   = "was made on another venue than the one the server runs on; the confirmation can no longer be approved"
)

// stateRefused is the refusal of a request state.
func stateRefused(reason string) *messages.Error {
	e := messages.InvalidParams("requestState", reason)
	e.NextStep = "nothing was executed; call the tool again to be asked again"
	return e
}

// open returns the content of a sealed state if it is authentic, made for
// this principal, tool and call, on venue (when the server names its
// venue; the user actor checks it in any case), and not expired.
func (s *stateSealer) open(wire string, p Principal, tool, callDigest, venue string) (formState, *messages.Error) {
	var st formState
	if len(wire) > maxRequestState || len(wire) <= len(requestStatePrefix) || wire[:len(requestStatePrefix)] != requestStatePrefix {
		return st, stateRefused(stateReasonInvalid)
	}
	raw, err := base64.RawURLEncoding.DecodeString(wire[len(requestStatePrefix):])
	ns := s.aead.NonceSize()
	if err != nil || len(raw) < ns+s.aead.Overhead() {
		return st, stateRefused(stateReasonInvalid)
	}
	plain, err := s.aead.Open(nil, raw[:ns], raw[ns:], []byte(requestStateLabel))
	if err != nil {
		return st, stateRefused(stateReasonInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	if dec.Decode(&st) != nil || st.V != 1 || messages.CheckConfirmationID(st.ConfirmationID) != nil {
		return formState{}, stateRefused(stateReasonInvalid)
	}
	if st.User != p.User || st.TokenID != p.TokenID || st.Tool != tool || st.CallDigest != callDigest {
		return formState{}, stateRefused(stateReasonForeign)
	}
	if venue != "" && st.Env != venue {
		return formState{}, stateRefused(stateReasonVenue)
	}
	if !s.now().Before(time.UnixMilli(st.Expires)) {
		return formState{}, stateRefused(stateReasonExpired)
	}
	return st, nil
}

// callDigest is the hex SHA-256 of a trading call as this layer parsed it:
// the tool and its canonical arguments (the command's Args, marshalled).
// The repeated call of a form must have the same digest, whatever the
// client's spelling of the JSON.
func callDigest(tool string, args any) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(mustJSON(args))
	return hex.EncodeToString(h.Sum(nil))
}
