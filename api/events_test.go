package api_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// EventTypes holds every event type the package declares (each constant
// Event… of a string), once: a change feed filter refuses any other.
func TestEventTypesAreEveryDeclaredType(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Event") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						declared = append(declared, v)
					}
				}
			}
		}
	}
	if len(declared) < 20 {
		t.Fatalf("found only %d event types: %v", len(declared), declared)
	}
	got := slices.Clone(api.EventTypes)
	slices.Sort(got)
	slices.Sort(declared)
	if !slices.Equal(got, declared) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("EventTypes %v, declared %v", got, declared)
	}
}

// A type filter names event types the feed has, each once; a huge or
// unknown one is refused before it is kept anywhere.
func TestAChangeFeedTypeFilterIsBounded(t *testing.T) {
	ok := api.ChangesRequest{Types: []string{api.EventVersionCreated, api.EventCompactionClaimed}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]string{
		{"table.version.creatd"},
		{strings.Repeat("<", 1<<20)},
		{api.EventVersionCreated, api.EventVersionCreated},
		{""},
	} {
		err := api.ChangesRequest{Types: types}.Validate()
		if !errors.Is(err, nserror.ErrInvalidInput) || len(err.Error()) > 2048 {
			t.Fatalf("%.40q: %v", types, err)
		}
	}
}
