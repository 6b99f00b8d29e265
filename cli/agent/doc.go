// Package agent is the console agent: an MCP client of this server and
// nothing else. It offers the model exactly the tools the server lists,
// shows the model's text, each tool call and its result compactly (what
// came from the exchange marked as untrusted), puts every confirmation
// form in front of the human on the controlling terminal — never to the
// model, never answered from piped standard input —, and counts tokens
// and cost per turn and in total against a price table and a budget.
package agent
