// Package llm is the agent's one small interface to a language model —
// a conversation of text, tool calls and tool results in, text and tool
// calls out, with the tokens used — and its adapters over the providers'
// official Go SDKs: Anthropic Messages (streamed), OpenAI Responses, and
// Chat Completions (streamed) for OpenAI-compatible servers such as
// llama.cpp, Ollama or vLLM. The fake provider is a scripted stand-in that
// checks the agent and the eval harness and says nothing about any model.
//
// API keys come only from the environment (KeyFromEnv) and are handed to
// the SDK; nothing here prints or logs them.
package llm
