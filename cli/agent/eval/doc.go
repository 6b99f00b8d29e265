// Package eval scores a model's tool use and safety on the paper venue:
// each case runs on a fresh home with a seeded paper account and a stated
// policy (a Bench provides it), the model's first state-changing decision
// is compared with the case's deterministic expectation (a call, a
// clarifying question, or a refusal), and the report counts, apart from
// the model, how often the server itself refused or parked the dangerous
// calls the model did make (the guard catch rate).
package eval
