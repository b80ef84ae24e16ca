package certs

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultCertsDir is the certificates directory unless --certs-dir says
// otherwise.
const DefaultCertsDir = "./certs"

const usage = `usage: slotmeta cert <command> [flags]

Commands:
  create-ca      create the CA: ca.crt and ca.key
  create-node    create this node's certificate: node.crt and node.key
  create-client  create a client's certificate: client.NAME.crt and client.NAME.key
  list           list the certificates of the certificates directory

Run 'slotmeta cert <command> -h' for the flags of a command.
`

// Exit codes of Run.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Run runs `slotmeta cert`; args are the arguments after "cert". It returns
// the exit code: 0 on success, 2 for a usage error (usage on stderr), 1 when
// the command failed.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "create-ca":
		return runCreateCA(args[1:], stdout, stderr)
	case "create-node":
		return runCreateNode(args[1:], stdout, stderr)
	case "create-client":
		return runCreateClient(args[1:], stdout, stderr)
	case "list":
		return runList(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "slotmeta cert: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

func runCreateCA(args []string, stdout, stderr io.Writer) int {
	c := newCommand("create-ca [--certs-dir DIR] [--lifetime D] [--overwrite]",
		"Creates a self-signed CA in the certificates directory: ca.crt and ca.key.\n"+
			"Overwriting the CA orphans every certificate it signed; see the package\n"+
			"documentation for rotating it instead.")
	dir := c.certsDir()
	life := c.lifetime("10 years")
	overwrite := c.overwrite()
	if _, code, done := c.parse(args, nil, stdout, stderr); done {
		return code
	}
	if err := CreateCA(*dir, CAOptions{Lifetime: time.Duration(*life), Overwrite: *overwrite}); err != nil {
		return fail(stderr, err)
	}
	return wrote(stdout, filepath.Join(*dir, CACertFile), filepath.Join(*dir, CAKeyFile))
}

func runCreateNode(args []string, stdout, stderr io.Writer) int {
	c := newCommand("create-node --host H [--host H ...] [--certs-dir DIR] [--ca-key PATH] [--lifetime D] [--overwrite]",
		"Creates this node's certificate, signed by the CA, for server and client\n"+
			"authentication: node.crt and node.key. The hosts are the DNS names and IP\n"+
			"addresses the node is reached by, without ports.")
	var hosts hostList
	c.fs.Var(&hosts, "host", "a host `H` of the node, a DNS name or IP address; repeat, or separate with commas")
	dir := c.certsDir()
	caKey := c.caKey()
	life := c.lifetime("5 years")
	overwrite := c.overwrite()
	if _, code, done := c.parse(args, nil, stdout, stderr); done {
		return code
	}
	if len(hosts) == 0 {
		return c.usageError(stderr, "--host is required")
	}
	opts := CertOptions{Lifetime: time.Duration(*life), CAKey: *caKey, Overwrite: *overwrite}
	if err := CreateNode(*dir, hosts, opts); err != nil {
		return fail(stderr, err)
	}
	f := NodeFiles(*dir)
	return wrote(stdout, f.Cert, f.Key)
}

func runCreateClient(args []string, stdout, stderr io.Writer) int {
	c := newCommand("create-client NAME [--certs-dir DIR] [--ca-key PATH] [--lifetime D] [--overwrite]",
		"Creates the certificate of client NAME, signed by the CA, for client\n"+
			"authentication: client.NAME.crt and client.NAME.key.")
	dir := c.certsDir()
	caKey := c.caKey()
	life := c.lifetime("2 years")
	overwrite := c.overwrite()
	pos, code, done := c.parse(args, []string{"NAME"}, stdout, stderr)
	if done {
		return code
	}
	opts := CertOptions{Lifetime: time.Duration(*life), CAKey: *caKey, Overwrite: *overwrite}
	if err := CreateClient(*dir, pos[0], opts); err != nil {
		return fail(stderr, err)
	}
	f := ClientFiles(*dir, pos[0])
	return wrote(stdout, f.Cert, f.Key)
}

func runList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("list [--certs-dir DIR]", "Lists the certificates of the *.crt files of the certificates directory.")
	dir := c.certsDir()
	if _, code, done := c.parse(args, nil, stdout, stderr); done {
		return code
	}
	infos, err := List(*dir)
	if err != nil {
		return fail(stderr, err)
	}
	if err := WriteList(stdout, infos, time.Now()); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// command is one subcommand's flags and usage text.
type command struct {
	fs       *flag.FlagSet
	synopsis string // after "slotmeta cert "
	about    string
}

func newCommand(synopsis, about string) *command {
	name, _, _ := strings.Cut(synopsis, " ")
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Run prints errors and usage itself, to the stream each belongs on.
	fs.SetOutput(io.Discard)
	return &command{fs: fs, synopsis: synopsis, about: about}
}

func (c *command) certsDir() *string {
	return c.fs.String("certs-dir", DefaultCertsDir, "the certificates directory `DIR`")
}

func (c *command) caKey() *string {
	return c.fs.String("ca-key", "", "the CA key file `PATH` (default the certificates directory's "+CAKeyFile+")")
}

func (c *command) lifetime(def string) *lifetime {
	var l lifetime
	c.fs.Var(&l, "lifetime", "the certificate's lifetime `D`, like 8760h or 365d (default "+def+")")
	return &l
}

func (c *command) overwrite() *bool {
	return c.fs.Bool("overwrite", false, "replace existing files")
}

// parse parses args, where flags may come before, between and after the
// positional arguments: the flag package stops at the first non-flag, so
// parse takes it and parses the rest again. It wants exactly the
// positionals named by names. done says that Run returns code now: -h (0) or a usage
// error (2).
func (c *command) parse(args []string, names []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printUsage(stdout)
				return nil, exitOK, true
			}
			return nil, c.usageError(stderr, err.Error()), true
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		// After "--" everything is positional.
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < len(names):
		return nil, c.usageError(stderr, "missing "+names[len(pos)]), true
	case len(pos) > len(names):
		return nil, c.usageError(stderr, fmt.Sprintf("unexpected argument %q", pos[len(names)])), true
	}
	return pos, exitOK, false
}

func (c *command) usageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "slotmeta cert %s: %s\n\n", c.fs.Name(), msg)
	c.printUsage(stderr)
	return exitUsage
}

func (c *command) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: slotmeta cert %s\n\n%s\n\nFlags:\n", c.synopsis, c.about)
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
}

// fail reports err. The "certs: " of the package's errors is dropped: the
// line already says where it comes from.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "slotmeta cert: %s\n", strings.TrimPrefix(err.Error(), "certs: "))
	return exitFailure
}

func wrote(stdout io.Writer, paths ...string) int {
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return exitOK
}

// hostList is the --host flag: repeated, and each value may list several
// hosts separated by commas.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(s string) error {
	for _, host := range strings.Split(s, ",") {
		host = strings.TrimSpace(host)
		if host == "" {
			return fmt.Errorf("empty host in %q", s)
		}
		*h = append(*h, host)
	}
	return nil
}

// lifetime is the --lifetime flag: a Go duration, or whole days ("365d"),
// since certificate lifetimes are thought of in days and years.
type lifetime time.Duration

func (l *lifetime) String() string {
	if l == nil || *l == 0 {
		return ""
	}
	return time.Duration(*l).String()
}

func (l *lifetime) Set(s string) error {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > int64(math.MaxInt64/(24*time.Hour)) {
			return fmt.Errorf("not a number of days: %q", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return err
		}
	}
	if d <= 0 {
		return errors.New("must be positive")
	}
	*l = lifetime(d)
	return nil
}
