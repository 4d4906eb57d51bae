// Package pgtest gives tests a real PostgreSQL: one server per test binary,
// started on first use from Debian's postgresql binaries in a temporary
// folder, as an unprivileged user (initdb refuses root), listening only on
// a Unix socket in that folder; each DSN call is a new empty database.
//
// A package whose tests use it runs them through Main, which stops the
// server and removes its folder when the tests end. Without the binaries
// the tests that need them skip, unless BOTD_REQUIRE_PG is set (CI), where
// they fail.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the admin connection's "pgx" driver
)

// startGuard bounds the server's start-up (initdb, then accepting
// connections); it only turns a hang into a failure.
const startGuard = 2 * time.Minute

var (
	once   sync.Once
	srv    *server
	srvErr error
	dbs    atomic.Int64
)

type server struct {
	dir    string // socket folder and data directory's parent
	cmd    *exec.Cmd
	exited chan struct{}
	admin  *sql.DB
}

// Main runs the package's tests and then stops the server, if one was
// started. Use it as the package's TestMain body: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop ends the server and removes its folder; the next DSN starts none.
func Stop() {
	once.Do(func() { srvErr = errors.New("pgtest: stopped") })
	if srv == nil {
		return
	}
	srv.admin.Close()
	// SIGINT is Postgres's fast shutdown: it ends the sessions and stops.
	srv.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-srv.exited:
	case <-time.After(startGuard):
		srv.cmd.Process.Kill()
		<-srv.exited
	}
	os.RemoveAll(srv.dir)
	srv = nil
}

// Available reports whether the postgres binaries are installed, and
// where.
func Available() (bindir string, ok bool) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := exec.LookPath("postgres"); err == nil {
			return dir, true
		}
	}
	// Debian keeps them out of PATH, one folder per major version.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, true
		}
	}
	return "", false
}

func version(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

// Skip skips t when there is no PostgreSQL to test against and
// BOTD_REQUIRE_PG is unset; with it set, it fails t instead.
func Skip(t testing.TB) {
	t.Helper()
	if _, ok := Available(); ok {
		return
	}
	msg := "PostgreSQL binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin: apt-get install postgresql"
	if os.Getenv("BOTD_REQUIRE_PG") != "" {
		t.Fatal(msg + " (BOTD_REQUIRE_PG is set)")
	}
	t.Skip(msg)
}

// DSN returns the DSN of a new, empty database for t, starting the
// server on first use. The database is dropped when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	Skip(t)
	once.Do(func() { srv, srvErr = start() })
	if srvErr != nil {
		t.Fatalf("pgtest: %v", srvErr)
	}
	name := fmt.Sprintf("t%d", dbs.Add(1))
	ctx := context.Background()
	if _, err := srv.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if srv != nil {
			srv.admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
	})
	return srv.dsn(name)
}

func (s *server) dsn(db string) string {
	return fmt.Sprintf("host=%s port=5432 user=botd dbname=%s sslmode=disable", s.dir, db)
}

func start() (*server, error) {
	bindir, _ := Available()
	dir, err := os.MkdirTemp("", "botd-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "postgres.log")
	initdb := exec.Command(filepath.Join(bindir, "initdb"), "-D", data, "-U", "botd", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir, initdb.SysProcAttr = dir, &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close()
	if cred != nil {
		os.Chown(logPath, int(cred.Uid), int(cred.Gid))
	}
	// Durability is not under test: no fsync makes a test database cheap.
	cmd := exec.Command(filepath.Join(bindir, "postgres"), "-D", data, "-k", dir, "-p", "5432",
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=64MB",
		"-c", "dynamic_shared_memory_type=mmap")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	// Pdeathsig is the backstop for a test binary that dies without Main's
	// Stop: the server goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &server{dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	s.admin, _ = sql.Open("pgx", s.dsn("postgres"))
	deadline := time.Now().Add(startGuard)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.admin.PingContext(ctx)
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(logPath)
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-s.exited
			log, _ := os.ReadFile(logPath)
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres did not accept connections in %v: %s", startGuard, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runAs picks who runs the server: the current user, or when that is
// root (initdb refuses it) the postgres user, else nobody, who is given
// the folder.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("running as root, and neither a postgres nor a nobody user to run the server as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	// The folder lives under the temp dir; the user must reach it.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
