//go:build unix

package agent

import (
	"os/exec"
	"syscall"
)

// detach puts the server in its own process group: the terminal's Ctrl-C
// reaches the agent, which cancels the turn, not the server.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
