package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Terminal opens the controlling terminal for a confirmation form.
type Terminal func() (io.ReadWriteCloser, error)

// ControllingTerminal opens /dev/tty: the terminal of the human who runs
// the agent, whatever standard input is. Without one (a script, a pipe,
// a service) the open fails and every form is declined. What was typed
// before the form is discarded: only a line typed once the form is shown
// answers it (a model's text can ask the human to type "y" ahead).
func ControllingTerminal() (io.ReadWriteCloser, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	// Through the raw connection: Fd would put the file in blocking mode,
	// and a withdrawn form's pending read must end when tty is closed.
	if rc, err := tty.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = discardInput(int(fd)) })
	}
	return tty, nil
}

// FormPrompt is the question under the server's plan.
const FormPrompt = "Approve and execute exactly this now? [y/N] "

// FormHandler answers the server's confirmation forms (elicitation, in
// either protocol era: the SDK turns an MRTR input request into the same
// call) on the terminal: it prints the server's own message, asks, and
// accepts only a typed y or yes. The model never sees the form; piped
// standard input cannot answer it. Forms asked at the same time (an MRTR
// answer may hold several input requests, which the SDK fulfils
// concurrently) are shown one at a time, so the line typed answers the
// form on the screen. note, when not nil, is told that a form could not
// be shown.
func FormHandler(open Terminal, note io.Writer) func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	onScreen := make(chan struct{}, 1) // holds the form being shown
	return func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		select {
		case onScreen <- struct{}{}:
			defer func() { <-onScreen }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		tty, err := open()
		if err != nil {
			if note != nil {
				fmt.Fprintf(note, "a confirmation form arrived but there is no terminal to show it on: declined, nothing is sent\n")
			}
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		defer tty.Close()
		answer := make(chan bool, 1)
		go func() { answer <- askOnTerminal(tty, req.Params.Message) }()
		select {
		case yes := <-answer:
			if yes {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}
			return &sdk.ElicitResult{Action: "decline"}, nil
		case <-ctx.Done():
			fmt.Fprintf(tty, "\nthe form was withdrawn: nothing is sent\n")
			return nil, ctx.Err()
		}
	}
}

// askOnTerminal prints the form and reads one line.
func askOnTerminal(tty io.ReadWriter, message string) bool {
	fmt.Fprintf(tty, "\n──── confirmation ────\n")
	fmt.Fprintf(tty, "%s\n", printableLines(message))
	fmt.Fprintf(tty, "%s", FormPrompt)
	line, _ := bufio.NewReader(tty).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		fmt.Fprintf(tty, "approved\n")
		return true
	}
	fmt.Fprintf(tty, "rejected: nothing is sent\n")
	return false
}
