package layers

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The claims of docs/architecture.md's "One way to do each thing" about
// configuration and backends, held to the code:
//
//   - Configuration. The configuration types are listed between the
//     markers below. Each listed type exists and has EnsureDefaults() and
//     Validate() error (its constructor calls both); every exported type
//     named Config, Options or Limits, or ending in Config, of a package
//     other than the test machinery is listed; and so is every struct a
//     listed type nests by value (server.Config's Store, SQL, …) but a
//     message (fields tagged for JSON: sqlworker.Spec).
//     Arguments of one call (objstore.WriteOptions, redisclaim.ListOptions,
//     …) are not configurations: their names end in Options.
//   - Backends. Nothing outside objstore (its tests aside) names a kind
//     of backend: objstore exports none (no type Kind, no Store.Kind),
//     and should one come back, nothing outside uses it. A caller asks
//     the store what it needs to know (PromotesByRename, Remote).
const configBegin, configEnd = "<!-- configuration types: begin -->\n", "<!-- configuration types: end -->\n"

// testMachinery are the packages the configuration rule skips: test and
// measuring machinery that no embedder configures (bench, which is
// public, is held to it).
func testMachinery(name string) bool {
	return slices.Contains(machinery, name) && name != "bench" && name != "cmd/flightns-bench"
}

// typed is a package of the module, type-checked from its source (test
// files excluded) against the export data of its imports.
type typed struct {
	name string // path below the module
	pkg  *types.Package
	info *types.Info
}

var (
	typedOnce sync.Once
	typedPkgs []typed
	typedErr  error
)

// typeCheck type-checks every package of the module, once per test
// binary.
func typeCheck(t *testing.T) []typed {
	t.Helper()
	typedOnce.Do(func() { typedPkgs, typedErr = loadTyped() })
	if typedErr != nil {
		t.Fatal(typedErr)
	}
	return typedPkgs
}

func loadTyped() ([]typed, error) {
	cmd := exec.Command("go", "list", "-tags", "duckdb_arrow", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,CgoFiles,Export", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, &listError{err, stderr.String()}
	}
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles, CgoFiles       []string
	}
	exports := map[string]string{}
	var own []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, module) {
			own = append(own, p)
		}
	}
	fset := token.NewFileSet()
	typedFset = fset
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(f)
	})
	var pkgs []typed
	for _, p := range own {
		var files []*ast.File
		for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		// cgo's C.… names cannot resolve here; what is checked does not
		// depend on them.
		conf := types.Config{Importer: imp, FakeImportC: true, Error: func(error) {}}
		pkg, _ := conf.Check(p.ImportPath, fset, files, info)
		pkgs = append(pkgs, typed{name: strings.TrimPrefix(p.ImportPath, module), pkg: pkg, info: info})
	}
	return pkgs, nil
}

type listError struct {
	err    error
	stderr string
}

func (e *listError) Error() string { return "go list: " + e.err.Error() + "\n" + e.stderr }

// documentedConfigs are the types listed between the markers, as
// "package/path.Type".
func documentedConfigs(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, configBegin), strings.Index(s, configEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/architecture.md has no %q … %q section", strings.TrimSpace(configBegin), strings.TrimSpace(configEnd))
	}
	item := regexp.MustCompile("^\\* `([a-z0-9/]+\\.[A-Z][A-Za-z0-9]*)`")
	var out []string
	for line := range strings.SplitSeq(s[i+len(configBegin):j], "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/architecture.md lists no configuration type between its markers")
	}
	return out
}

// message says whether a struct is a message, its fields tagged for
// JSON (sqlworker.Spec, which a worker process is handed): encoded as
// it is, not configured.
func message(st *types.Struct) bool {
	for i := range st.NumFields() {
		if strings.Contains(st.Tag(i), `json:"`) {
			return true
		}
	}
	return false
}

// isConfigName says whether an exported type's name makes it a
// configuration.
func isConfigName(name string) bool {
	return name == "Options" || name == "Limits" || strings.HasSuffix(name, "Config")
}

// hasMethod says whether *T has a method name of signature sig
// ("func()" or "func() error").
func hasMethod(named *types.Named, name, sig string) bool {
	ms := types.NewMethodSet(types.NewPointer(named))
	sel := ms.Lookup(named.Obj().Pkg(), name)
	return sel != nil && types.TypeString(sel.Type(), nil) == sig
}

func TestEveryConfigurationHasEnsureDefaultsAndValidateAndIsDocumented(t *testing.T) {
	pkgs := typeCheck(t)
	byName := map[string]*types.Package{}
	for _, p := range pkgs {
		byName[p.name] = p.pkg
	}
	listed := documentedConfigs(t)
	for _, full := range listed {
		dot := strings.LastIndex(full, ".")
		pkgName, typeName := full[:dot], full[dot+1:]
		p := byName[pkgName]
		if p == nil {
			t.Errorf("docs/architecture.md lists %s, but the module has no package %s", full, pkgName)
			continue
		}
		tn, ok := p.Scope().Lookup(typeName).(*types.TypeName)
		if !ok {
			t.Errorf("docs/architecture.md lists %s, but %s has no type %s", full, pkgName, typeName)
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			t.Errorf("%s is not a defined type", full)
			continue
		}
		if !hasMethod(named, "EnsureDefaults", "func()") {
			t.Errorf("%s has no EnsureDefaults() (it fills what is unset)", full)
		}
		if !hasMethod(named, "Validate", "func() error") {
			t.Errorf("%s has no Validate() error (it refuses what is wrong, naming it)", full)
		}
		// What it nests by value is configuration too.
		if st, ok := named.Underlying().(*types.Struct); ok {
			for f := range st.Fields() {
				fn, ok := f.Type().(*types.Named)
				if !ok || fn.Obj().Pkg() == nil || !strings.HasPrefix(fn.Obj().Pkg().Path(), module) {
					continue
				}
				if fs, ok := fn.Underlying().(*types.Struct); !ok || message(fs) {
					continue
				}
				nested := strings.TrimPrefix(fn.Obj().Pkg().Path(), module) + "." + fn.Obj().Name()
				if !slices.Contains(listed, nested) {
					t.Errorf("%s nests %s (field %s), which docs/architecture.md does not list as a configuration", full, nested, f.Name())
				}
			}
		}
	}
	for _, p := range pkgs {
		if testMachinery(p.name) {
			continue
		}
		for _, name := range p.pkg.Scope().Names() {
			tn, ok := p.pkg.Scope().Lookup(name).(*types.TypeName)
			if !ok || !tn.Exported() || !isConfigName(name) {
				continue
			}
			if full := p.name + "." + name; !slices.Contains(listed, full) {
				t.Errorf("%s is a configuration that docs/architecture.md does not list between its configuration markers", full)
			}
		}
	}
}

func TestNothingOutsideObjstoreNamesABackendKind(t *testing.T) {
	const objstore = module + "objstore"
	for _, p := range typeCheck(t) {
		if p.name == "objstore" {
			if tn, ok := p.pkg.Scope().Lookup("Kind").(*types.TypeName); ok {
				t.Errorf("objstore exports the backend kind %s: keep backends inside objstore (docs/architecture.md, Object storage)", tn.Name())
			}
			if store, ok := p.pkg.Scope().Lookup("Store").(*types.TypeName); ok && types.NewMethodSet(types.NewPointer(store.Type())).Lookup(p.pkg, "Kind") != nil {
				t.Error("objstore.Store has a method Kind: a caller asks what a backend does, never which one it is (docs/architecture.md, Object storage)")
			}
			continue
		}
		for id, obj := range p.info.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != objstore {
				continue
			}
			kind := false
			switch o := obj.(type) {
			case *types.TypeName:
				kind = o.Name() == "Kind"
			case *types.Const:
				if n, ok := o.Type().(*types.Named); ok {
					kind = n.Obj().Name() == "Kind"
				}
			case *types.Func:
				kind = o.Name() == "Kind" && o.Signature().Recv() != nil
			}
			if kind {
				t.Errorf("%s: %s names objstore's backend kind (%s): ask the store what you need to know instead (docs/architecture.md, Object storage)",
					p.name, typedPosition(id), obj.Name())
			}
		}
	}
}

// typedPosition is the file and line of id, for an error.
func typedPosition(id *ast.Ident) string {
	return filepath.Base(typedFset.Position(id.Pos()).String())
}

var typedFset *token.FileSet
