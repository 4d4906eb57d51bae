// Command botd is the self-hosted group chat assistant daemon. This file
// parses the command line and hands off; the work lives in packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/botd-dev/botd/internal/box"
)

// exitError carries an exit code out of a subcommand.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	cs := []command{
		{"run", "botd run [--config FILE]", "run the daemon: channels, agent, IPC host", cmdRun},
		{"mcp", "botd mcp (--group FOLDER | --http [ADDR]) [--config FILE]", "serve the media and memory tools over MCP (stdio for one group, or Streamable HTTP)", cmdMCP},
		{"config", "botd config check [--config FILE]", "validate the config and list every problem", cmdConfig},
		{"reload", reloadLine, "make the running botd read its config again; report what changed, what needs a restart, or the problems", cmdReload},
		{"media", "botd media [usage | prune [--group G] [--older-than AGE] | migrate --to s3|local]", "show media disk use per group; prune by group or age; move the bytes to or from the bucket", cmdMedia},
		{"database", databaseMigrateLine, "copy the SQLite database into Postgres, every table, counts checked", cmdDatabase},
		{"doctor", doctorLine, "check the config, credentials, programs, disk, database and listen addresses: one OK/WARN/FAIL line each", cmdDoctor},
		{"status", statusLine, "which instance is active on the database, since when, and the lease's epoch", cmdStatus},
		{"usage", usageLine, "what the model calls cost, per group, day and model", cmdUsage},
		{"chats", chatsLine, "chats waiting with a pairing code, and the groups approved live: list, approve, deny, remove", cmdChats},
		{"mcp-login", mcpLoginLine, "sign botd in to a remote MCP server of agent.mcp_servers (OAuth authorization code with PKCE)", cmdMCPLogin},
	}
	cs = append(cs, networkCommands...)
	return append(cs, command{"version", "botd version", "print the version", cmdVersion})
}

// networkCommands are the commands a built-in network brings along
// (in a file behind the network's build tag, like its networks_<name>.go).
var networkCommands []command

func usage(w io.Writer) {
	fmt.Fprintln(w, "botd — a self-hosted chat assistant for groups\n\nUsage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-58s %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'botd <command> --help' for a command's flags.")
}

func main() {
	// A child of package box (a parser of a member's file) limits itself
	// and runs its job here, before anything of the daemon starts. Any
	// other start is made not dumpable there, before its first child: no
	// process of botd's user may read its environment or memory.
	box.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	case "-v", "--version":
		args[0] = "version"
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(stderr, "botd:", ee.msg)
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "botd:", err)
		return 1
	}
	fmt.Fprintf(stderr, "botd: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// newFlags makes a subcommand's flag set whose --help prints its usage.
func newFlags(name, usageLine, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n", usageLine, summary)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse handles flag errors uniformly: --help exits 0, bad flags exit 2.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fail(2, "")
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "config file (default ./config.yaml, else $BOTD_CONFIG)")
}

// configPath picks --config, then ./config.yaml, then $BOTD_CONFIG.
func configPath(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if _, err := os.Stat("config.yaml"); err == nil {
		return "config.yaml"
	}
	if p := os.Getenv("BOTD_CONFIG"); p != "" {
		return p
	}
	return "config.yaml"
}

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "botd version", "Print the version.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, currentBuild())
	return nil
}
