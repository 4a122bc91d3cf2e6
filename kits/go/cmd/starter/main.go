// Command starter is the Go kit's starter bot: it plays one seat of a match, or
// every match the ladder assigns, with the reference choice (policy.go).
//
//	starter --server HOST:PORT --token TOKEN [--tls-ca FILE]
//	starter --server HOST:PORT --ladder --name NAME --key-file FILE [--version V] [--tls-ca FILE]
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"mammamia"
)

const usage = `usage: starter --server HOST:PORT --token TOKEN [--tls-ca FILE]
       starter --server HOST:PORT --ladder --name NAME --key-file FILE [--version V] [--tls-ca FILE]

Plays Mamma Mia! on an arena server: one seat of one match (--token), or every
match the ladder assigns (--ladder). It plays an order when the public oven
suffices for it, else its most plentiful ingredient, and bakes when it can. One
line per decision goes to stderr.

exit status: 0 when the match finished (with --ladder: when the bot left the
ladder, or a newer entry of it took over), and on SIGINT or SIGTERM; 1 when the
server refused the bot, stayed away or aborted the match; 2 for a bad command line.

options:
`

// settings are the command line's.
type settings struct {
	server, token, name, keyFile, version, tlsCA string
	ladder, tls                                  bool
	matches                                      int
	retryFor                                     time.Duration
}

// usageError is a bad command line: exit status 2.
type usageError struct{ message string }

func (e usageError) Error() string { return e.message }

var versionPattern = regexp.MustCompile(`^[A-Za-z0-9._+-]{0,32}$`)

// parse returns the settings of args, or a usageError (flag.ErrHelp for --help).
func parse(args []string, output io.Writer) (settings, error) {
	var s settings
	flags := flag.NewFlagSet("starter", flag.ContinueOnError)
	flags.SetOutput(output)
	flags.Usage = func() {
		fmt.Fprint(output, usage)
		flags.PrintDefaults()
	}
	flags.StringVar(&s.server, "server", os.Getenv("MAMMAMIA_SERVER"), "the server, `HOST:PORT` (env MAMMAMIA_SERVER)")
	flags.StringVar(&s.token, "token", os.Getenv("MAMMAMIA_SEAT_TOKEN"), "the seat `TOKEN` of one match (env MAMMAMIA_SEAT_TOKEN)")
	flags.BoolVar(&s.ladder, "ladder", false, "enter the ladder and play each assigned match")
	flags.StringVar(&s.name, "name", "", "the bot's `NAME` (required with --ladder; default go-starter)")
	flags.StringVar(&s.keyFile, "key-file", "", "with --ladder: the bot's key; when the `FILE` is absent the name is\nregistered and its new key written there (mode 0600)")
	flags.StringVar(&s.version, "version", "", "with --ladder: the `VERSION` that enters, rated apart from the name's other\nversions (default: the first 12 hex digits of the SHA-256 of this program)")
	flags.IntVar(&s.matches, "matches", 0, "with --ladder: leave after `N` assignments, once their matches have ended")
	flags.StringVar(&s.tlsCA, "tls-ca", "", "connect with TLS, trusting the PEM certificates in `FILE`")
	flags.BoolVar(&s.tls, "tls", false, "connect with TLS, trusting the system's certificates")
	flags.DurationVar(&s.retryFor, "retry-for", 60*time.Second, "give up after this long without the server")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return s, err
		}
		return s, usageError{err.Error()}
	}
	switch {
	case flags.NArg() > 0:
		return s, usageError{fmt.Sprintf("unexpected argument %q", flags.Arg(0))}
	case s.server == "":
		return s, usageError{"--server HOST:PORT is required (or MAMMAMIA_SERVER)"}
	case s.matches < 0:
		return s, usageError{"--matches must not be negative"}
	case s.ladder && s.name == "":
		return s, usageError{"--ladder needs --name NAME"}
	case s.ladder && s.keyFile == "":
		return s, usageError{"--ladder needs --key-file FILE"}
	case s.ladder && !versionPattern.MatchString(s.version):
		return s, usageError{fmt.Sprintf("--version must be up to 32 letters, digits, '-', '_', '.' or '+', not %q", s.version)}
	case !s.ladder && s.token == "":
		return s, usageError{"--token TOKEN is required (or --ladder)"}
	case !s.ladder && (s.keyFile != "" || s.version != "" || s.matches != 0):
		return s, usageError{"--key-file, --version and --matches go with --ladder"}
	}
	if s.name == "" {
		s.name = "go-starter"
	}
	return s, nil
}

func main() {
	s, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "starter: %s\n", err)
		os.Exit(2)
	}
	os.Exit(run(s))
}

// run plays as s says and returns the exit status.
func run(s settings) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("bot", s.name)
	// A signal stops the bot at once: a seat left in play meets its deadlines (the
	// server's default plays it), and the ladder is left.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	conn, err := mammamia.Dial(s.server, mammamia.DialOptions{TLS: s.tls, CAFile: s.tlsCA})
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	seat := mammamia.SeatOptions{Name: s.name, Strategy: choose, Log: log, RetryFor: s.retryFor}

	if !s.ladder {
		result, err := conn.PlaySeat(ctx, s.token, seat)
		switch {
		case ctx.Err() != nil:
			log.Warn("stopping", "why", "signal")
			return 0
		case err != nil:
			return fail(err)
		case !result.Finished():
			return fail(fmt.Errorf("match %s aborted: %s", result.MatchID, result.Reason))
		}
		return 0
	}

	key, err := ladderKey(ctx, conn, s, log)
	if err != nil {
		return fail(err)
	}
	version := s.version
	if version == "" {
		version = programVersion()
	}
	played, err := conn.PlayLadder(ctx, mammamia.LadderOptions{
		Name: s.name, Key: key, Version: version, Seat: seat, Matches: s.matches,
	})
	switch {
	case errors.Is(err, mammamia.ErrReplaced):
		log.Info("done", "matches", played, "why", err.Error())
		fmt.Fprintf(os.Stderr, "starter: %s: stopped\n", err)
		return 0
	case err != nil:
		return fail(err)
	}
	log.Info("done", "matches", played)
	return 0
}

// ladderKey returns the bot's key from the key file; when the file is absent it
// registers the name and writes the new key there (mode 0600) first.
func ladderKey(ctx context.Context, conn *mammamia.Conn, s settings, log *slog.Logger) (string, error) {
	data, err := os.ReadFile(s.keyFile)
	if err == nil {
		key := strings.TrimSpace(string(data))
		if key == "" {
			return "", fmt.Errorf("key file %s is empty", s.keyFile)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	// Made before registering, so that a key the server shows only once always has a
	// place to go.
	file, err := os.OpenFile(s.keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	key, err := conn.Register(ctx, s.name)
	if err == nil {
		_, err = fmt.Fprintln(file, key)
	}
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(s.keyFile)
		return "", fmt.Errorf("cannot register %q: %w", s.name, err)
	}
	log.Info("registered", "key_file", s.keyFile)
	return key, nil
}

// programVersion returns the first 12 hex digits of the SHA-256 of this program's
// file, so that a rebuilt bot whose code changed enters as a new version; "" when
// the file cannot be read.
func programVersion() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// fail prints err on one line and returns exit status 1.
func fail(err error) int {
	fmt.Fprintf(os.Stderr, "starter: %s\n", err)
	return 1
}
