package restserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/flightns/flightns/api"
)

// The CloudEvents JSON appended by hand is, byte for byte, what
// json.Marshal makes of the cloudEvent with the event as its data: for
// any strings (control characters, HTML's <>&, invalid UTF-8), times,
// ids and places in a sequence.
func TestCloudEventsAreWhatJSONMarshalMakes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune{'<', '>', '&', '"', '\\', '\n', '\x00', '\u2028', 'é', 'a'})),
			rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "raw")) }))
		ev := api.Event{
			Seq:          rapid.Uint64().Draw(t, "seq"),
			Time:         time.Unix(rapid.Int64Range(-62_000_000_000, 253_000_000_000).Draw(t, "sec"), rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")).In(time.FixedZone("z", rapid.IntRange(-50_000, 50_000).Draw(t, "zone"))),
			Type:         str.Draw(t, "type"),
			ID:           api.ID(rapid.SliceOfN(str, 0, 3).Draw(t, "id")),
			Principal:    str.Draw(t, "principal"),
			Version:      rapid.Uint64().Draw(t, "version"),
			ManifestPath: str.Draw(t, "path"),
		}
		n := rapid.IntRange(0, 1000).Draw(t, "n")
		want, werr := json.Marshal(cloudEvent{SpecVersion: "1.0", ID: fmt.Sprintf("%d-%d", ev.Seq, n), Source: "flightns",
			Type: eventTypePrefix + ev.Type, Time: ev.Time, Subject: ev.ID.String(), DataContentType: "application/json", Data: ev})
		data, derr := json.Marshal(ev)
		var got []byte
		gerr := derr
		if derr == nil {
			got, gerr = appendCloudEvent(nil, ev, n, data)
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("json.Marshal: %v; by hand: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("by hand\n%s\njson.Marshal\n%s", got, want)
		}
	})
}

// gzipItem and gzipRefused recognise, independently of acceptsGzip, an
// Accept-Encoding item that names gzip and one that names it with q=0.
var (
	gzipItem    = regexp.MustCompile(`(?i)^[ \t]*(x-)?gzip[ \t]*(;|$)`)
	gzipRefused = regexp.MustCompile(`(?i)^[ \t]*(x-)?gzip[ \t]*;[ \t]*q[ \t]*=[ \t]*0(\.0*)?[ \t]*$`)
)

// Any Accept-Encoding header is read without a panic, and gzip is chosen
// only when it is named with a quality above 0 or "*" accepts it: a
// header that refuses gzip by name, and names it nowhere else, never gets
// it.
func FuzzAcceptsGzip(f *testing.F) {
	for _, seed := range []string{"", "gzip", "gzip;q=0", "br;q=1.0, gzip;q=0.8", "*", "*;q=0", "*, gzip;q=0", "GZIP ; Q = 0.5", "x-gzip", "gzip;q=abc", ";;,,", "gzip;q=-1",
		"*,0gZip;q=0", "*, x-gzip;q=0.000", "*, gzip;q=0;q=1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got := acceptsGzip([]string{header})
		if got && !strings.Contains(strings.ToLower(header), "gzip") && !strings.Contains(header, "*") {
			t.Fatalf("%q: gzip chosen though neither gzip nor * is named", header)
		}
		named, refused := 0, false
		for _, item := range strings.Split(header, ",") {
			if gzipItem.MatchString(item) {
				named++
			}
			refused = refused || gzipRefused.MatchString(item)
		}
		if got && named == 1 && refused {
			t.Fatalf("%q: gzip chosen though refused", header)
		}
	})
}

// A coding whose name merely contains gzip is not gzip: with "*" beside
// it, gzip is still accepted (a case the fuzzer found in the old oracle).
func TestAcceptsGzipReadsCodingNames(t *testing.T) {
	for header, want := range map[string]bool{"*,0gZip;q=0": true, "*, gzip;q=0": false, "*, X-GZIP ; q = 0.0": false, "0gzip": false, "gzip;q=0.001": true} {
		if got := acceptsGzip([]string{header}); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}
