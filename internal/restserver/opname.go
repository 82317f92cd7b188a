package restserver

// OpName names the operation a request path routes to, as the Lance
// Namespace protocol and the Flight actions spell it (CreateNamespace,
// CreateTableVersion, …), "Changes" for the change feed (ChangesPath), or
// "unrouted" when no route serves the path. Middleware (metrics, logs)
// uses it to label requests; it decides nothing.
func OpName(escapedPath string) string {
	if escapedPath == ChangesPath {
		return "Changes"
	}
	rt, _, err := match(escapedPath)
	if err != nil {
		return "unrouted"
	}
	return rt.name
}
