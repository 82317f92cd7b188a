// Package audit records who did what to which object, and who was
// refused: every mutation and every refused request of every surface, as
// one structured event (principal, surface, operation, target id,
// outcome), to the server's log or a file of its own (--audit-file). An
// event never carries a credential: the surfaces hand it a principal's
// name, an operation's name, an object id and an error code, nothing a
// caller sent as a secret.
package audit
