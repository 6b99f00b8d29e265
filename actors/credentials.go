package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/keys"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// exchangeName is the exchange every credential is for.
const exchangeName = "bybit"

// permissionsMaxAge is how old a permission check may be before a state
// change triggers a new one (docs/invariants.md "Keys").
const permissionsMaxAge = time.Hour

// validEnvironments are the environments a key may be stored for.
var validEnvironments = []string{"paper", "bybit-demo", "bybit-testnet", "bybit-live"}

// refuseCredentialCommand checks what every key command needs: the user,
// and an environment this process talks to.
func (u *userActor) refuseCredentialCommand(env string) *messages.Error {
	if !u.state.Exists {
		return messages.Errorf(messages.CodeNotFound, "no such user")
	}
	if u.state.Disabled {
		return messages.Errorf(messages.CodePermissionDenied, "this user is disabled")
	}
	if !slices.Contains(validEnvironments, env) {
		return messages.InvalidParams("environment", "must be paper, bybit-demo, bybit-testnet or bybit-live")
	}
	if env != u.env {
		return &messages.Error{
			Code: messages.CodeInvalidParams, Message: "this server talks to " + u.env + ", not " + env,
			NextStep: "run the keys command with --venue " + u.env + ", or stop the server and run it with the other venue",
			Details:  map[string]any{"field": "environment", "reason": "not the venue of this server"},
		}
	}
	return nil
}

// addCredential checks a new key with the exchange, then seals and journals
// it (docs/invariants.md "Keys"). Unverifiable keys are refused unless the admin attests on
// paper or demo. The check is an action: the user's other messages are
// served while it waits on the venue, and everything is validated again
// when its outcome comes back.
func (u *userActor) addCredential(ctx actor.Context, uc *userCommand, m *messages.AddCredentialRequest, sender *actor.PID) {
	if e := u.validateAdd(m); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	fingerprint := keys.Fingerprint(m.APIKey)
	var a *action
	a = u.begin(actionKeyAdd, sender, uc.origin, func(out *keyChecked) {
		// The state may have changed while the check was in flight (a
		// concurrent keys add, a deleted user): check again.
		if e := u.validateAdd(m); e != nil {
			u.finish(ctx, a, e)
			return
		}
		old, _ := u.state.CredentialFor(m.Environment)
		now := u.now().UTC()
		attested := false
		if out.err != nil {
			unverifiable := out.err.Code == messages.CodeExchangeUnavailable || out.err.Code == messages.CodeRateLimited
			if !(unverifiable && m.AdminAttest && m.Environment != "bybit-live") {
				u.finish(ctx, a, out.err)
				return
			}
			attested = true
		}
		var verdict keys.Verdict
		if !attested {
			verdict = keys.Check(keys.Permissions{ReadOnly: out.info.ReadOnly, Groups: out.info.Permissions})
			if !verdict.Accepted {
				rej := state.Event{Type: messages.RecordCredentialRejected, Payload: messages.CredentialCheckedEvent{
					Environment: m.Environment, Fingerprint: fingerprint, Permissions: verdict.Granted,
					Offending: offendingNames(verdict), CheckedAt: now,
				}}

				u.write(ctx, rej, a.origin, func(_ wal.Record, err error) {
					if err != nil {
						u.finish(ctx, a, messages.AsError(err))
						return
					}
					u.finish(ctx, a, verdict.Error())
				})
				return
			}
		}
		id := keys.NewCredentialID()
		sealed, err := keys.Seal(u.masterKey, keys.Binding{CredentialID: id, User: u.state.User, Exchange: exchangeName, Environment: m.Environment}, m.APIKey, m.APISecret)
		if err != nil {
			u.finish(ctx, a, messages.AsError(err))
			return
		}
		blob, _ := json.Marshal(sealed)
		ev := state.Event{Type: messages.RecordCredentialAdded, Payload: messages.CredentialAddedEvent{
			CredentialID: id, Exchange: exchangeName, Environment: m.Environment, Fingerprint: fingerprint,
			Permissions: verdict.Granted, ReadOnlyCap: verdict.ReadOnlyCap, Attested: attested,
			Replaced: old.ID, Sealed: blob, CheckedAt: now,
		}}

		u.write(ctx, ev, a.origin, func(_ wal.Record, err error) {
			if err != nil {
				u.finish(ctx, a, messages.AsError(err))
				return
			}
			u.commit(ev)
			u.toVenue(ctx, &rekey{}, nil) // the session now uses the new key
			v := u.state.CredentialView(m.Environment)
			v.Changed = true
			u.finish(ctx, a, v)
		})
	})
	u.checkKey(ctx, a, uc.ctx, m.APIKey, m.APISecret)
}

// validateAdd checks a keys add against the current state.
func (u *userActor) validateAdd(m *messages.AddCredentialRequest) *messages.Error {
	if e := u.refuseCredentialCommand(m.Environment); e != nil {
		return e
	}
	if m.APIKey == "" || len(m.APIKey) > keys.MaxAPIKeyLen {
		return messages.InvalidParams("api_key", "must be 1-256 characters")
	}
	if m.APISecret.IsZero() || len(m.APISecret.Reveal()) > keys.MaxSecretLen {
		return messages.InvalidParams("api_secret", fmt.Sprintf("must be 1-%d characters", keys.MaxSecretLen))
	}
	_, exists := u.state.CredentialFor(m.Environment)
	if exists && !m.Replace {
		return &messages.Error{
			Code: messages.CodeInvalidParams, Message: "a key is already stored for " + m.Environment,
			NextStep: "use `guarded-exchange keys replace` to replace it", Details: map[string]any{"field": "api_key", "reason": "already stored"},
		}
	}
	if !exists && m.Replace {
		return &messages.Error{Code: messages.CodeNotFound, Message: "no key is stored for " + m.Environment, NextStep: "use `guarded-exchange keys add`"}
	}
	return nil
}

// recheck asks the exchange again what the stored key may do, journals
// credential_checked, and runs then with the new state. It is an action:
// then runs when the outcome is journaled (or refused), and must answer
// (finish) the action.
func (u *userActor) recheck(ctx actor.Context, uc *userCommand, sender *actor.PID, then func(*action, *messages.Error)) {
	// Trading calls wait while a re-check is in flight (held): the check
	// may block trading.
	u.rechecking++
	done := then
	then = func(a *action, e *messages.Error) {
		u.rechecking--
		done(a, e)
		if u.rechecking == 0 {
			u.drain(ctx)
		}
	}
	c, ok := u.state.CredentialFor(u.env)
	var a *action
	a = u.begin(actionKeyRecheck, sender, uc.origin, func(out *keyChecked) {
		if out.err != nil {
			then(a, out.err)
			return
		}
		verdict := keys.Check(keys.Permissions{ReadOnly: out.info.ReadOnly, Groups: out.info.Permissions})
		ev := state.Event{Type: messages.RecordCredentialChecked, Payload: messages.CredentialCheckedEvent{
			CredentialID: c.ID, Environment: c.Environment, Fingerprint: c.Fingerprint, Permissions: verdict.Granted,
			Offending: offendingNames(verdict), ReadOnlyCap: verdict.ReadOnlyCap, Accepted: verdict.Accepted, CheckedAt: u.now().UTC(),
		}}

		u.write(ctx, ev, a.origin, func(_ wal.Record, err error) {
			if err != nil {
				then(a, messages.AsError(err))
				return
			}
			u.commit(ev)
			then(a, nil)
		})
	})
	if !ok {
		then(a, state.NoKeyError())
		return
	}
	apiKey, secret, err := openCredential(u.masterKey, u.state.User, c)
	if err != nil {
		then(a, err)
		return
	}
	u.checkKey(ctx, a, uc.ctx, apiKey, messages.NewSecret(secret))
}

// checkKey hands the key check of action a to the venue actor. Its outcome
// comes back as a *keyChecked message; the mailbox does not wait.
func (u *userActor) checkKey(ctx actor.Context, a *action, caller context.Context, apiKey string, secret messages.Secret) {
	u.toVenue(ctx, &checkKeyRequest{action: a.id, ctx: caller, apiKey: apiKey, apiSecret: secret}, ctx.Self())
}

// openCredential decrypts a stored key. A failure (wrong master key, a
// record moved to another user) is exchange_credentials_invalid.
func openCredential(masterKey []byte, user string, c state.Credential) (string, string, *messages.Error) {
	var sealed keys.Sealed
	if err := json.Unmarshal(c.Sealed, &sealed); err != nil {
		return "", "", &messages.Error{Code: messages.CodeExchangeCredentialsInvalid, Message: "the stored key cannot be read", NextStep: "replace it with `guarded-exchange keys replace`, outside the chat", Err: err}
	}
	apiKey, secret, err := keys.Open(masterKey, keys.Binding{CredentialID: c.ID, User: user, Exchange: exchangeName, Environment: c.Environment}, sealed)
	if err != nil {
		return "", "", &messages.Error{Code: messages.CodeExchangeCredentialsInvalid, Message: "the stored key cannot be decrypted", NextStep: "replace it with `guarded-exchange keys replace`, outside the chat", Err: err}
	}
	return apiKey, secret.Reveal(), nil
}

// OpenStoredKeys decrypts every user's stored key for env with the master
// key and hands each to fn, users in name order. It is how the embedded
// paper venue, which keeps no state between runs, learns at start the keys
// it must accept. A key that cannot be opened is skipped and counted in
// failed: the user actor refuses it when it is used, with the reason. Call
// it after the journal is opened and before Start.
func (r *UserReplay) OpenStoredKeys(masterKey []byte, env string, fn func(user, apiKey string, secret messages.Secret)) (failed int, err error) {
	states, err := r.states(time.Now())
	if err != nil {
		return 0, err
	}
	for _, user := range slices.Sorted(maps.Keys(states)) {
		c, ok := states[user].CredentialFor(env)
		if !ok {
			continue
		}
		apiKey, secret, oerr := openCredential(masterKey, user, c)
		if oerr != nil {
			failed++
			continue
		}
		fn(user, apiKey, messages.NewSecret(secret))
	}
	return failed, nil
}

// accountRead hands a read to the venue actor, which answers the requester
// directly.
func (u *userActor) accountRead(ctx actor.Context, m *accountAsk, sender *actor.PID) {
	switch {
	case !u.state.Exists:
		u.reply(ctx, sender, messages.Errorf(messages.CodeNotFound, "no such user"))
		return
	case u.state.Disabled:
		u.reply(ctx, sender, messages.Errorf(messages.CodePermissionDenied, "this user is disabled"))
		return
	}
	if _, ok := u.state.CredentialFor(u.env); !ok {
		u.reply(ctx, sender, state.NoKeyError())
		return
	}
	u.toVenue(ctx, m, sender)
}

func offendingNames(v keys.Verdict) []string {
	out := make([]string, 0, len(v.Offending))
	for _, o := range v.Offending {
		out = append(out, o.Permission)
	}
	return out
}
