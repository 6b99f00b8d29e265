package messages

import "time"

// DecisionAnswerWait is how long the answer of an approval may take: the
// approved action runs before the decision answers, within its own bound
// (the longest is cancel_all_orders: up to 20 paced cancels, each with
// its venue timeouts and settle wait, about 9 minutes with the server's
// default bounds), plus time to journal its outcome. Whoever waits for an
// approval's answer (the user actor's ask, the CLI over the control
// socket) waits at least this long, so that a slow execution is not
// reported as a failure while the order goes out.
const DecisionAnswerWait = 10 * time.Minute
