package restserver

import (
	"bytes"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/flightns/flightns/nserror"
)

// Browsers. Any web page can make its visitor's browser send a request
// to any address, this server's on loopback included, with whatever the
// browser holds for it (a remembered Basic login, a client certificate)
// — and with authentication off nothing is needed at all. The page
// cannot read the answer, but a mutation has happened by then. Two rules
// keep the HTTP surfaces out of reach of other sites, authentication on
// or off:
//
//   - CrossSite: a request a browser says comes from another site
//     (Sec-Fetch-Site) or origin (Origin) is refused, on every route.
//     Clients that are not browsers (LanceDB, curl, the CLI) send
//     neither header.
//   - jsonContentType, jsonBody: a mutation's body is JSON, and says so (Content-Type:
//     application/json). A page can send a cross-origin request without
//     asking the server first (a CORS preflight, which nothing here
//     answers) only with a body of text/plain, a form or multipart; so a
//     mutation a page sends is refused even by a browser that sends
//     neither header above.

// CrossSite refuses (PermissionDenied) a request a browser sent for a
// page of another site or origin: its Sec-Fetch-Site is other than
// same-origin or none (cross-site, same-site), or its Origin is not this
// server's own (scheme, host and port, as the request reached it). A
// request with neither header passes. It is the one cross-site check of
// the HTTP surfaces: REST runs it on every request, the console on every
// API call.
func CrossSite(r *http.Request) error {
	site := r.Header.Values("Sec-Fetch-Site")
	switch {
	case len(site) > 1:
		return crossSite("Sec-Fetch-Site is given %d times", len(site))
	case len(site) == 1 && site[0] != "same-origin" && site[0] != "none":
		return crossSite("Sec-Fetch-Site is %s", site[0])
	}
	origin := r.Header.Values("Origin")
	switch {
	case len(origin) > 1:
		return crossSite("Origin is given %d times", len(origin))
	case len(origin) == 1 && !sameOrigin(origin[0], r):
		return crossSite("Origin %s is not this server's", origin[0])
	}
	return nil
}

func crossSite(format string, args ...any) error {
	return nserror.New(nserror.PermissionDenied, "cross-site request refused: "+format, args...)
}

// sameOrigin reports whether origin (an Origin header) is the server's
// own as r reached it: the same scheme (https with TLS), host and port
// (a scheme's default port as none).
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && u.Host != "" && strings.EqualFold(hostPort(scheme, u.Host), hostPort(scheme, r.Host))
}

// hostPort is host without scheme's default port.
func hostPort(scheme, host string) string {
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	}
	return host
}

// jsonContentType refuses (415, InvalidInput) a request whose
// Content-Type is not application/json: exactly that type, with any
// parameters, a charset only utf-8 (RFC 8259: JSON is UTF-8). Types with
// a +json suffix (application/merge-patch+json, …) are refused too: they
// name other semantics than the operation's request model, and no client
// of the protocol sends them.
func jsonContentType(r *http.Request) error {
	cts := r.Header.Values("Content-Type")
	switch {
	case len(cts) == 0:
		return notJSON("it has no Content-Type")
	case len(cts) > 1:
		return notJSON("Content-Type is given %d times", len(cts))
	}
	mt, params, err := mime.ParseMediaType(cts[0])
	if err != nil || mt != "application/json" {
		return notJSON("Content-Type is %q", cts[0])
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return notJSON("Content-Type is %q: JSON is UTF-8", cts[0])
	}
	return nil
}

func notJSON(format string, args ...any) error {
	return withStatus(http.StatusUnsupportedMediaType, nserror.InvalidInput,
		"a mutation's body is JSON sent as Content-Type: application/json; "+format, args...)
}

// jsonBody refuses (400, InvalidInput) an empty mutation body: a
// mutation names what it changes in JSON, {} when the path says it all.
func jsonBody(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nserror.New(nserror.InvalidInput, "a mutation needs a JSON body: send {} when the path names all it changes")
	}
	return nil
}
