package llm

import (
	"context"
	"net/url"
	"strings"
)

// redacted is a provider whose errors never show the API key or the
// credentials in --base-url. An SDK's error can quote the request's
// address and the answer's body, and a server may write the key it was
// sent into that body; the error goes to the console and into the eval
// report.
type redacted struct {
	Provider
	secrets []string
}

// withRedaction wraps p so that its errors hide cfg's secrets.
func withRedaction(p Provider, cfg Config) Provider {
	var secrets []string
	if cfg.APIKey != "" {
		secrets = append(secrets, cfg.APIKey)
	}
	if u, err := url.Parse(cfg.BaseURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			secrets = append(secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
		secrets = append(secrets, u.User.String())
	}
	if len(secrets) == 0 {
		return p
	}
	return &redacted{Provider: p, secrets: secrets}
}

// Complete implements Provider.
func (r *redacted) Complete(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	reply, err := r.Provider.Complete(ctx, req, onText)
	if err != nil {
		return reply, &redactedError{msg: redact(err.Error(), r.secrets), err: err}
	}
	return reply, nil
}

// redactedError is a provider's error with its text redacted; errors.Is
// and errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact replaces each secret in s.
func redact(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
