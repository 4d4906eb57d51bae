//go:build ignore

// gofigures prints the shape figures of a package's Go code that a grep
// cannot count reliably: the methods of a type, the fields of a struct,
// and the longest parameter list of the functions under a directory
// (test files left out). scripts/structure.sh runs it.
//
//	go run scripts/gofigures.go methods agent Agent
//	go run scripts/gofigures.go fields agent Options
//	go run scripts/gofigures.go params agent
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gofigures methods|fields DIR TYPE | params DIR")
		os.Exit(2)
	}
	what, dir := os.Args[1], os.Args[2]
	switch what {
	case "methods", "fields":
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "gofigures: name the type")
			os.Exit(2)
		}
		files := parse(dir, false)
		if what == "methods" {
			fmt.Println(methods(files, os.Args[3]))
		} else {
			fmt.Println(fields(files, os.Args[3]))
		}
	case "params":
		n, where := longestParams(parse(dir, true))
		fmt.Printf("%d %s\n", n, where)
	default:
		fmt.Fprintf(os.Stderr, "gofigures: unknown figure %q\n", what)
		os.Exit(2)
	}
}

type file struct {
	path string
	f    *ast.File
	fset *token.FileSet
}

// parse reads the non-test Go files of dir (and, deep, of the
// directories under it).
func parse(dir string, deep bool) []file {
	var out []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (!deep || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		out = append(out, file{p, f, fset})
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofigures:", err)
		os.Exit(1)
	}
	return out
}

// methods counts the methods declared on typ or *typ.
func methods(files []file, typ string) int {
	n := 0
	for _, f := range files {
		for _, d := range f.f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			t := fd.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if id, ok := t.(*ast.Ident); ok && id.Name == typ {
				n++
			}
		}
	}
	return n
}

// fields counts the fields of struct typ (an embedded struct is one).
func fields(files []file, typ string) int {
	for _, f := range files {
		for _, d := range f.f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok || ts.Name.Name != typ {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return 0
				}
				n := 0
				for _, fl := range st.Fields.List {
					n += max(1, len(fl.Names))
				}
				return n
			}
		}
	}
	return -1
}

// longestParams is the most parameters any function or method (or
// function literal) takes, and where.
func longestParams(files []file) (int, string) {
	best, where := 0, ""
	for _, f := range files {
		ast.Inspect(f.f, func(n ast.Node) bool {
			var ft *ast.FuncType
			name := "func literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				ft, name = x.Type, x.Name.Name
			case *ast.FuncLit:
				ft = x.Type
			default:
				return true
			}
			c := 0
			for _, p := range ft.Params.List {
				c += max(1, len(p.Names))
			}
			if c > best {
				best, where = c, fmt.Sprintf("%s (%s)", name, f.fset.Position(ft.Pos()))
			}
			return true
		})
	}
	return best, where
}
