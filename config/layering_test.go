package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/internal/settings"
)

// goList runs `go list` with args and returns its lines. The import graph
// is the build's own answer: a test that parsed import lines itself could
// miss a path through a package it does not read.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The agent runs over the channels interface, never a network's code: it
// links neither config (which composes every channel's section) nor any
// channel package, so whatsmeow and the Telegram and Slack SDKs stay out
// of it and of every test binary that builds it.
func TestAgentLinksNoChannelCode(t *testing.T) {
	deps := goList(t, "-deps", "github.com/botd-dev/botd/agent")
	if !slices.Contains(deps, "github.com/botd-dev/botd/channels") {
		t.Fatalf("go list -deps agent does not list the channels interface package; the listing is not what this test expects:\n%s", strings.Join(deps, "\n"))
	}
	for _, d := range deps {
		if d == "github.com/botd-dev/botd/config" || strings.HasPrefix(d, "github.com/botd-dev/botd/channels/") ||
			strings.HasPrefix(d, "go.mau.fi/whatsmeow") {
			t.Errorf("agent links %s", d)
		}
	}
}

// Only the command reads the config file: components get their own
// section's type, so none can reach another's settings through config.
func TestOnlyTheCommandImportsConfig(t *testing.T) {
	var importers []string
	for _, line := range goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/botd-dev/botd/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		if slices.Contains(strings.Fields(imports), "github.com/botd-dev/botd/config") {
			importers = append(importers, pkg)
		}
	}
	if want := []string{"github.com/botd-dev/botd/cmd/botd"}; !slices.Equal(importers, want) {
		t.Errorf("packages importing config = %v, want %v", importers, want)
	}
}

// config composes the networks' sections through their registered
// descriptions (channels.Register), never by importing a network: a
// network left out of the build leaves config unchanged.
func TestConfigImportsNoNetwork(t *testing.T) {
	imports := goList(t, "-f", `{{join .Imports "\n"}}`, "github.com/botd-dev/botd/config")
	if !slices.Contains(imports, "github.com/botd-dev/botd/channels") {
		t.Fatalf("config does not import the channels registry; the listing is not what this test expects:\n%s", strings.Join(imports, "\n"))
	}
	for _, imp := range imports {
		if strings.HasPrefix(imp, "github.com/botd-dev/botd/channels/") {
			t.Errorf("config imports the network %s", imp)
		}
	}
}

// A network's build tag leaves its package out of botd: cmd/botd names
// it in networks_<name>.go alone.
func TestNetworkBuildTagLeavesItOut(t *testing.T) {
	for _, net := range []string{"discord", "matrix", "slack", "telegram", "whatsapp"} {
		t.Run(net, func(t *testing.T) {
			pkg := "github.com/botd-dev/botd/channels/" + net
			if deps := goList(t, "-tags", "goolm", "-deps", "github.com/botd-dev/botd/cmd/botd"); !slices.Contains(deps, pkg) {
				t.Fatalf("the full build does not link %s", pkg)
			}
			if deps := goList(t, "-tags", "goolm,no"+net, "-deps", "github.com/botd-dev/botd/cmd/botd"); slices.Contains(deps, pkg) {
				t.Errorf("-tags no%s still links %s", net, pkg)
			}
		})
	}
}

// A network is linked in one place: its package (and its own
// subpackages) is imported, outside tests, only by cmd/botd's files
// behind its build tag (networks_<name>.go, and a command it brings).
// And the newest network is named nowhere else at all, in code or
// comment: everything shared reads its description.
func TestNetworksAreNamedOnlyByTheirImportsFile(t *testing.T) {
	const mod = "github.com/botd-dev/botd/"
	nets := []string{"discord", "matrix", "slack", "telegram", "whatsapp"}
	fset := token.NewFileSet()
	for _, line := range goList(t, "-tags", "goolm", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}`, mod+"...") {
		parts := strings.SplitN(line, "|", 3)
		pkg, dir, files := parts[0], parts[1], strings.Split(parts[2], ",")
		for _, name := range files {
			if name == "" {
				continue
			}
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				ip := strings.Trim(imp.Path.Value, `"`)
				for _, net := range nets {
					own := mod + "channels/" + net
					if ip != own || pkg == own || strings.HasPrefix(pkg, own+"/") {
						continue
					}
					if pkg == mod+"cmd/botd" && (name == "networks_"+net+".go" || hasTag(t, path, "!no"+net)) {
						continue
					}
					t.Errorf("%s/%s imports %s", pkg, name, ip)
				}
			}
			if strings.HasPrefix(pkg, mod+"channels/discord") || (pkg == mod+"cmd/botd" && name == "networks_discord.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(strings.ToLower(string(src)), "discord") {
				t.Errorf("%s/%s names discord; read its description (channels.Lookup) instead", pkg, name)
			}
		}
	}
}

// One service per capability: the media service (fetch, list, keep) links
// none of the services built over it — links, generation, sending, the
// tools' host — so each stays a package of its own; and the rig their
// tests share is linked by tests only.
func TestMediaLinksNoServiceBuiltOverIt(t *testing.T) {
	const mod = "github.com/botd-dev/botd/"
	deps := goList(t, "-deps", mod+"media")
	if !slices.Contains(deps, mod+"mediaregistry") {
		t.Fatalf("go list -deps media does not list mediaregistry; the listing is not what this test expects:\n%s", strings.Join(deps, "\n"))
	}
	for _, d := range deps {
		if strings.HasPrefix(d, mod+"media/") && d != mod+"media/generate" {
			t.Errorf("media links %s", d)
		}
	}
	for _, line := range goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...") {
		pkg, imports, _ := strings.Cut(line, " ")
		if slices.Contains(strings.Fields(imports), mod+"media/mediatest") {
			t.Errorf("%s imports the test rig media/mediatest", pkg)
		}
	}
}

// hasTag reports whether the file at path is built only without the tag.
func hasTag(t *testing.T, path, constraint string) bool {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.HasPrefix(string(src), "//go:build "+constraint+"\n")
}

// Services speak their own types; protocols only adapt (issue 39): tools,
// which owns every tool's arguments, results and error codes, links
// neither the IPC transport nor mcp-go; the agent calls the tools through
// modelview and links neither ipc nor mcp; and no package but the wiring
// (cmd/, config) and the protocols themselves imports ipc or mcp.
func TestServicesImportNoProtocol(t *testing.T) {
	const mod = "github.com/botd-dev/botd/"
	for _, d := range goList(t, "-deps", mod+"tools") {
		if d == mod+"ipc" || d == mod+"mcp" || strings.HasPrefix(d, "github.com/mark3labs/mcp-go") {
			t.Errorf("tools links %s", d)
		}
	}
	for _, d := range goList(t, "-deps", mod+"agent") {
		if d == mod+"ipc" || d == mod+"mcp" {
			t.Errorf("agent links %s", d)
		}
	}
	allowed := []string{mod + "ipc", mod + "mcp", mod + "config"}
	for _, line := range goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...") {
		pkg, imports, _ := strings.Cut(line, " ")
		// A test rig (mediatest, chantest…) drives a service through the
		// transports on purpose; it is linked by tests only.
		if slices.Contains(allowed, pkg) || strings.HasPrefix(pkg, mod+"cmd/") || strings.HasSuffix(pkg, "test") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == mod+"ipc" || imp == mod+"mcp" {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// config imports only the registries and what it composes (issue 39):
// every package of botd it imports is internal/settings (the sections'
// registry, and the problems and durations every section speaks),
// channels (the networks' registry) or one whose type it reads itself — a
// type named in a field of one of its struct types or a type declared
// over one (llm, groups). A component that registered its section
// (settings.Register) is reached through the registry, never imported,
// even as a field: a helper imported for its functions belongs in the
// component that needs it.
func TestConfigImportsOnlyWhatItComposes(t *testing.T) {
	const mod = "github.com/botd-dev/botd/"
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	composed := map[string]bool{} // import paths named in a struct field's type
	imported := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{} // local name → import path
		for _, imp := range file.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(path, mod) {
				continue
			}
			imported[path] = true
			name := filepath.Base(path)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = path
		}
		note := func(typ ast.Expr) {
			ast.Inspect(typ, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] != "" {
						composed[names[id.Name]] = true
					}
				}
				return true
			})
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StructType:
				for _, fld := range n.Fields.List {
					note(fld.Type)
				}
			case *ast.TypeSpec:
				// type Group = groups.Config: a section under its own name.
				if _, isStruct := n.Type.(*ast.StructType); !isStruct {
					note(n.Type)
				}
			}
			return true
		})
	}
	if len(composed) == 0 {
		t.Fatal("no section found in config's struct types; the parse is not what this test expects")
	}
	for path := range imported {
		if composed[path] || path == mod+"internal/settings" || path == mod+"channels" {
			continue
		}
		t.Errorf("config imports %s but composes no section of it", strings.TrimPrefix(path, mod))
	}
	// The sections registered in this test binary (sections_test.go links
	// their packages).
	secs := settings.Sections()
	if len(secs) < 9 {
		t.Fatalf("%d sections registered; the test binary does not link the components", len(secs))
	}
	for _, s := range secs {
		pkg := reflect.TypeOf(s.New()).Elem().PkgPath()
		if imported[pkg] {
			t.Errorf("config imports %s, whose section %s it reaches through the registry", strings.TrimPrefix(pkg, mod), s.Key)
		}
	}
}
