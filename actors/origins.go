package actors

import "github.com/guarded-exchange/guarded-exchange/messages"

// The origins of the server's own work.
var (
	systemOrigin = messages.Origin{Role: messages.RoleSystem, Channel: messages.ChannelInternal, PeerUID: -1, PeerPID: -1}
	agentOrigin  = messages.Origin{Role: messages.RoleAgent, Channel: messages.ChannelStdio, PeerUID: -1, PeerPID: -1}
)
