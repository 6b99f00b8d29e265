// Package control is the server side of the control socket (docs/commands.md "The control socket"): where
// the socket lives (Layout: <home>/run/control.sock, or GX_CONTROL_SOCKET),
// who may connect (the server's uid and GX_APPROVER_UIDS, checked with
// SO_PEERCRED), how many connections each may hold, and the versioned line
// protocol (messages.ControlRequest / ControlResponse) that carries typed
// commands to the actors. The CLI's client side is cli.ControlClient.
package control
