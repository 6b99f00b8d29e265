// Package app is the composition root of guarded-exchange: it implements
// cli.Runtime by wiring the journal, the actor system, the venue (the
// embedded paper simulator or Bybit) and the MCP server together. It is the
// only package that imports everything; main.go only calls cli.Main with it.
package app
