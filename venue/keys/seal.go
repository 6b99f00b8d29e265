package keys

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Sizes and limits of the sealed format, version 1 (see doc.go).
const (
	// Version is the format version Seal writes and Open accepts.
	Version = 1
	// MasterKeyLen is the required master key length in bytes (AES-256).
	MasterKeyLen = 32
	// SaltLen is the length of the per-credential HKDF salt in bytes.
	SaltLen = 32
	// NonceLen is the AES-GCM nonce length in bytes (96 bits).
	NonceLen = 12
	// TagLen is the AES-GCM authentication tag length in bytes.
	TagLen = 16
	// MaxBindingFieldLen bounds each Binding field, in bytes.
	MaxBindingFieldLen = 256
	// MaxAPIKeyLen bounds the API key, in bytes.
	MaxAPIKeyLen = 256
	// MaxSecretLen bounds the API secret, in bytes. It leaves room for a
	// PEM-encoded RSA private key, which Bybit accepts in place of an HMAC
	// secret.
	MaxSecretLen = 8192

	// hkdfInfo is the HKDF context string; a new format gets a new one.
	hkdfInfo = "guarded-exchange credentials v1"
	// fingerprintDomain separates Fingerprint's hash from any other SHA-256
	// of an API key.
	fingerprintDomain = "guarded-exchange api key fingerprint v1\x00"
	// credentialIDPrefix starts every NewCredentialID.
	credentialIDPrefix = "cred_"
)

var (
	// ErrDecrypt is returned by Open for every Sealed that does not
	// authenticate under the given master key and Binding: a wrong master
	// key, a Sealed moved to another user, credential id, exchange or
	// environment, any flipped bit, a malformed or truncated field, an
	// unknown version. Open never returns a partial or garbage credential.
	// Match it with errors.Is.
	ErrDecrypt = errors.New("keys: cannot decrypt credential")
	// ErrMasterKey is returned by Seal and Open when the master key is not
	// exactly MasterKeyLen bytes. It is an operator error (a wrong or
	// truncated key file), not a property of the credential.
	ErrMasterKey = errors.New("keys: master key must be exactly 32 bytes")
)

// Binding is the context a credential is sealed to. Every field goes into
// the AES-GCM associated data, so a Sealed opens only with the very same
// Binding. Fields are compared as exact bytes (no case folding).
type Binding struct {
	// CredentialID is the credential's id, from NewCredentialID.
	CredentialID string
	// User is the user that owns the key.
	User string
	// Exchange names the exchange, e.g. "bybit".
	Exchange string
	// Environment names the exchange environment, e.g. "demo", "testnet"
	// or "mainnet".
	Environment string
}

// validate checks that every field is set and bounded. It names the field,
// never its value.
func (b Binding) validate() error {
	for _, f := range []struct{ name, v string }{
		{"credential_id", b.CredentialID},
		{"user", b.User},
		{"exchange", b.Exchange},
		{"environment", b.Environment},
	} {
		if f.v == "" {
			return messages.InvalidParams(f.name, "must not be empty")
		}
		if len(f.v) > MaxBindingFieldLen {
			return messages.InvalidParams(f.name, fmt.Sprintf("must be at most %d bytes", MaxBindingFieldLen))
		}
	}
	return nil
}

// associatedData encodes b unambiguously: the format version byte, then
// each field as a 4-byte big-endian length and its bytes, in the order
// CredentialID, User, Exchange, Environment.
func (b Binding) associatedData() []byte {
	ad := make([]byte, 0, 1+4*4+len(b.CredentialID)+len(b.User)+len(b.Exchange)+len(b.Environment))
	ad = append(ad, Version)
	for _, f := range []string{b.CredentialID, b.User, b.Exchange, b.Environment} {
		ad = binary.BigEndian.AppendUint32(ad, uint32(len(f)))
		ad = append(ad, f...)
	}
	return ad
}

// Sealed is an encrypted API key and secret, meant to be stored in a
// journal record payload as JSON:
//
//	{"v":1,"salt":"<base64>","nonce":"<base64>","ct":"<base64>"}
//
// It holds no plaintext: the API key and the secret are both inside CT.
// The zero value opens to nothing (ErrDecrypt).
type Sealed struct {
	// V is the format version, Version.
	V int `json:"v"`
	// Salt is the per-credential HKDF salt, SaltLen random bytes.
	Salt []byte `json:"salt"`
	// Nonce is the AES-GCM nonce, NonceLen random bytes.
	Nonce []byte `json:"nonce"`
	// CT is the AES-GCM ciphertext of the API key and the secret, followed
	// by the TagLen-byte tag.
	CT []byte `json:"ct"`
}

// Seal encrypts apiKey and apiSecret for b under masterKey. Each call draws
// a fresh random salt and nonce, so sealing the same credential twice gives
// different Sealed values.
//
// Errors: ErrMasterKey for a master key that is not 32 bytes; a
// *messages.Error with code invalid_params naming the field ("api_key",
// "api_secret", "credential_id", "user", "exchange", "environment") for an
// empty or over-long input. No error contains the key or the secret.
func Seal(masterKey []byte, b Binding, apiKey string, apiSecret Secret) (Sealed, error) {
	var salt [SaltLen]byte
	var nonce [NonceLen]byte
	_, _ = rand.Read(salt[:]) // never fails (crypto/rand, Go 1.24+)
	_, _ = rand.Read(nonce[:])
	return seal(masterKey, b, apiKey, apiSecret, salt[:], nonce[:])
}

// seal is Seal with the salt and nonce given, for known-answer tests.
func seal(masterKey []byte, b Binding, apiKey string, apiSecret Secret, salt, nonce []byte) (Sealed, error) {
	if len(masterKey) != MasterKeyLen {
		return Sealed{}, ErrMasterKey
	}
	if err := b.validate(); err != nil {
		return Sealed{}, err
	}
	switch {
	case apiKey == "":
		return Sealed{}, messages.InvalidParams("api_key", "must not be empty")
	case len(apiKey) > MaxAPIKeyLen:
		return Sealed{}, messages.InvalidParams("api_key", fmt.Sprintf("must be at most %d bytes", MaxAPIKeyLen))
	case apiSecret.IsZero():
		return Sealed{}, messages.InvalidParams("api_secret", "must not be empty")
	case apiSecret.Len() > MaxSecretLen:
		return Sealed{}, messages.InvalidParams("api_secret", fmt.Sprintf("must be at most %d bytes", MaxSecretLen))
	}
	aead, err := newAEAD(masterKey, salt)
	if err != nil {
		return Sealed{}, err
	}
	pt := encodePlaintext(apiKey, apiSecret.Reveal())
	ct := aead.Seal(nil, nonce, pt, b.associatedData())
	clear(pt)
	return Sealed{
		V:     Version,
		Salt:  append([]byte(nil), salt...),
		Nonce: append([]byte(nil), nonce...),
		CT:    ct,
	}, nil
}

// Open decrypts s, which must have been sealed for exactly b under
// masterKey. It returns ErrMasterKey for a master key that is not 32 bytes
// and an error matching ErrDecrypt for anything else that is wrong with s;
// it never returns a partial credential. Open does not panic on any input.
func Open(masterKey []byte, b Binding, s Sealed) (apiKey string, apiSecret Secret, err error) {
	if len(masterKey) != MasterKeyLen {
		return "", Secret{}, ErrMasterKey
	}
	if s.V != Version {
		return "", Secret{}, ErrDecrypt
	}
	if len(s.Salt) != SaltLen || len(s.Nonce) != NonceLen ||
		len(s.CT) < TagLen+8+1+1 || len(s.CT) > TagLen+8+MaxAPIKeyLen+MaxSecretLen {
		return "", Secret{}, ErrDecrypt
	}
	aead, err := newAEAD(masterKey, s.Salt)
	if err != nil {
		return "", Secret{}, err
	}
	pt, err := aead.Open(nil, s.Nonce, s.CT, b.associatedData())
	if err != nil {
		return "", Secret{}, ErrDecrypt
	}
	defer clear(pt)
	k, sec, ok := decodePlaintext(pt)
	if !ok {
		return "", Secret{}, ErrDecrypt
	}
	return k, NewSecret(sec), nil
}

// newAEAD derives the credential's sub-key from masterKey and salt with
// HKDF-SHA256 and returns AES-256-GCM under it.
func newAEAD(masterKey, salt []byte) (cipher.AEAD, error) {
	sub, err := hkdf.Key(sha256.New, masterKey, salt, hkdfInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("keys: derive sub-key: %w", err)
	}
	defer clear(sub)
	block, err := aes.NewCipher(sub)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return aead, nil
}

// encodePlaintext lays out the API key and the secret as two fields, each a
// 4-byte big-endian length and its bytes.
func encodePlaintext(apiKey, secret string) []byte {
	pt := make([]byte, 0, 8+len(apiKey)+len(secret))
	pt = binary.BigEndian.AppendUint32(pt, uint32(len(apiKey)))
	pt = append(pt, apiKey...)
	pt = binary.BigEndian.AppendUint32(pt, uint32(len(secret)))
	pt = append(pt, secret...)
	return pt
}

// decodePlaintext is the inverse of encodePlaintext. It accepts only
// exactly two non-empty, bounded fields and no trailing bytes.
func decodePlaintext(pt []byte) (apiKey, secret string, ok bool) {
	field := func(max int) (string, bool) {
		if len(pt) < 4 {
			return "", false
		}
		n := binary.BigEndian.Uint32(pt)
		if n == 0 || n > uint32(max) || uint64(n) > uint64(len(pt)-4) {
			return "", false
		}
		v := string(pt[4 : 4+n])
		pt = pt[4+n:]
		return v, true
	}
	if apiKey, ok = field(MaxAPIKeyLen); !ok {
		return "", "", false
	}
	if secret, ok = field(MaxSecretLen); !ok || len(pt) != 0 {
		return "", "", false
	}
	return apiKey, secret, true
}

// NewCredentialID returns a fresh random credential id: "cred_" followed by
// 16 lowercase hex digits (64 random bits).
func NewCredentialID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return credentialIDPrefix + hex.EncodeToString(b[:])
}

// ValidCredentialID reports whether id has the shape NewCredentialID
// produces. Use it to refuse a malformed id from the command line before
// looking it up.
func ValidCredentialID(id string) bool {
	if len(id) != len(credentialIDPrefix)+16 || id[:len(credentialIDPrefix)] != credentialIDPrefix {
		return false
	}
	for _, c := range []byte(id[len(credentialIDPrefix):]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Fingerprint returns a short identifier of apiKey that is safe for logs
// and the journal: "fp_" followed by the first 12 hex digits of
// SHA-256("guarded-exchange api key fingerprint v1\x00" || apiKey), then,
// when apiKey has at least 12 bytes and its last 4 are ASCII letters or
// digits, "_" and those 4 characters, which is how a person matches it with
// the key list on Bybit ("fp_1a2b3c4d5e6f_DfEI"). The hash prefix cannot be
// reversed to the key and 4 visible characters do not help guess the rest.
// An empty apiKey gives "".
func Fingerprint(apiKey string) string {
	if apiKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(fingerprintDomain + apiKey))
	fp := "fp_" + hex.EncodeToString(sum[:6])
	if len(apiKey) >= 12 {
		tail := apiKey[len(apiKey)-4:]
		for _, c := range []byte(tail) {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				return fp
			}
		}
		fp += "_" + tail
	}
	return fp
}
