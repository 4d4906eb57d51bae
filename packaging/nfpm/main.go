// Command nfpm builds botd's .deb with nFPM's library (the deb packager
// only: its rpm support pulls a module the proxy does not serve). It is a
// module of its own so nFPM's dependencies stay out of botd's go.mod.
//
//	go run ./packaging/nfpm -config packaging/nfpm.yaml -target dist/
//
// Run it from the repository's root: the config's paths are relative to it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
)

func main() {
	config := flag.String("config", "packaging/nfpm.yaml", "nFPM config")
	target := flag.String("target", "dist", "directory the package is written to")
	format := flag.String("packager", "deb", "package format")
	flag.Parse()
	path, err := build(*config, *target, *format)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nfpm:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

// build writes the package into dir under its conventional name
// (botd_<version>_<arch>.deb) and returns its path; a failed build leaves
// no partial file behind.
func build(config, dir, format string) (string, error) {
	// One of our variables left unset would make a package with an empty
	// arch or version: refuse instead. (nFPM asks for its own too, such as
	// NFPM_PASSPHRASE for signing: those may stay empty.)
	var unset []string
	cfg, err := nfpm.ParseFileWithEnvMapping(config, func(k string) string {
		v, ok := os.LookupEnv(k)
		if !ok && strings.HasPrefix(k, "BOTD_") {
			unset = append(unset, k)
		}
		return v
	})
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", config, err)
	}
	if len(unset) > 0 {
		return "", fmt.Errorf("%s: not set in the environment: %v", config, unset)
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	pkg, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, pkg.ConventionalFileName(info))
	tmp, err := os.CreateTemp(dir, ".nfpm-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	info.Target = path
	if err := pkg.Package(info, tmp); err != nil {
		tmp.Close()
		return "", fmt.Errorf("package: %w", err)
	}
	if err := errors.Join(tmp.Chmod(0o644), tmp.Close()); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
