package messages

import "time"

// DecisionAnswerWait is how long the answer of an approval may take: the
// approved action runs before the decision answers, and its execution is
// bounded by two minutes (venue timeouts, the settle wait, a cancel-all's
// pacing), plus time to journal its outcome. Whoever waits for an
// approval's answer (the user actor's ask, the CLI over the control
// socket) waits at least this long, so that a slow execution is not
// reported as a failure while the order goes out.
const DecisionAnswerWait = 2*time.Minute + 30*time.Second
