// Package llmtest is a scripted stand-in for the Anthropic Messages,
// OpenAI Responses and Chat Completions APIs over real loopback HTTP, for
// tests that run the official SDKs (and the built binary) against it.
package llmtest
