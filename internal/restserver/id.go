package restserver

import (
	"net/url"
	"unicode/utf8"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// MaxDelimiterLen bounds the delimiter query parameter.
const MaxDelimiterLen = 16

// delimiterOf returns the request's delimiter: the delimiter query
// parameter, "$" when absent or empty.
func delimiterOf(q url.Values) (string, error) {
	d := q.Get("delimiter")
	if d == "" {
		return api.Delimiter, nil
	}
	if len(d) > MaxDelimiterLen || !utf8.ValidString(d) {
		return "", nserror.New(nserror.InvalidInput, "delimiter %q is not a UTF-8 string of at most %d bytes", d, MaxDelimiterLen)
	}
	for _, r := range d {
		if r < 0x20 || r == 0x7f {
			return "", nserror.New(nserror.InvalidInput, "delimiter %q contains a control character", d)
		}
	}
	return d, nil
}

// parseID turns the {id} segment of a path, still percent-encoded as it
// came on the wire, into an id: decoded here (so an encoded "/" stays in its
// name and "$" may arrive as %24), then split on delim. The delimiter alone
// is the root namespace. An empty segment, an empty name ("a$$b", "$a") or
// an invalid name is InvalidInput.
//
// The segment is form-decoded: "+" is a space. Lance's Rust client
// form-encodes ids (seen with LanceDB 0.39): a space arrives as "+", a plus
// as %2B.
func parseID(raw, delim string) (api.ID, error) {
	s, err := url.QueryUnescape(raw)
	if err != nil {
		return nil, nserror.New(nserror.InvalidInput, "id %q in the path is not valid percent-encoding", raw)
	}
	if s == "" {
		return nil, nserror.New(nserror.InvalidInput, "the id in the path is empty; the root namespace is written as the delimiter %q", delim)
	}
	if !utf8.ValidString(s) {
		return nil, nserror.New(nserror.InvalidInput, "id %q in the path is not UTF-8", raw)
	}
	return api.ParseID(s, delim)
}
