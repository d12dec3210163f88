package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
	"golang.org/x/term"
)

func init() {
	commands["users"] = command{"manage console accounts and their API tokens (users add|list|passwd|disable|token|revoke-token)", usersCmd}
}

const usersUsage = `usage: formd users add --email E --role owner|editor|viewer [--sites a,b] [--name N] [--password-stdin]
       formd users list
       formd users passwd --email E [--password-stdin]
       formd users disable --email E
       formd users token --email E --name NAME
       formd users revoke-token --id ID
each also takes --data DIR or --store URL, the store of the server`

// terminal is where formd users asks for a password: stdin, and whether it
// is a terminal that can read without echo. Tests replace it.
var terminal = struct {
	stdin        io.Reader
	isTerminal   func() bool
	readPassword func() ([]byte, error)
}{
	stdin:        os.Stdin,
	isTerminal:   func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
	readPassword: func() ([]byte, error) { return term.ReadPassword(int(os.Stdin.Fd())) },
}

// usersCmd runs a users subcommand as the operator: whoever can open the
// store has every right anyway.
func usersCmd(args []string, stdout, stderr io.Writer) int {
	subs := map[string]func(ctx context.Context, u *usersRun) int{
		"add": usersAdd, "list": usersList, "passwd": usersPasswd, "disable": usersDisable, "token": usersToken, "revoke-token": usersRevokeToken,
	}
	if len(args) == 0 || subs[args[0]] == nil {
		fmt.Fprintln(stderr, usersUsage)
		return 2
	}
	u := &usersRun{name: "formd users " + args[0], stdout: stdout, stderr: stderr}
	u.fs = flag.NewFlagSet(u.name, flag.ContinueOnError)
	u.fs.SetOutput(stderr)
	u.loader = config.NewLoader(u.fs, os.Getenv, config.StorageSettings...)
	u.email = u.fs.String("email", "", "the account's e-mail address")
	switch args[0] {
	case "add":
		u.role = u.fs.String("role", "", "owner, editor or viewer")
		u.sites = u.fs.String("sites", accounts.AllSites, "comma-separated site ids the account may act on; * for every site")
		u.label = u.fs.String("name", "", "the person's name, as the console shows it")
		u.passwordStdin = u.fs.Bool("password-stdin", false, "read the password from the first line of stdin instead of asking for it")
	case "passwd":
		u.passwordStdin = u.fs.Bool("password-stdin", false, "read the new password from the first line of stdin instead of asking for it")
	case "token":
		u.label = u.fs.String("name", "", "what the token is for, such as zapier or backup-script")
	case "revoke-token":
		u.id = u.fs.String("id", "", "the token's id (tok_…), as formd users list shows it")
	}
	if err := parseFlags(u.fs, args[1:]); err != nil {
		return 2
	}
	if u.fs.NArg() > 0 {
		return u.usage("unexpected argument %q; flags go as --name value", u.fs.Arg(0))
	}
	ctx := context.Background()
	return subs[args[0]](ctx, u)
}

// usersRun is one users subcommand: its flags and output.
type usersRun struct {
	name           string
	fs             *flag.FlagSet
	loader         *config.Loader
	stdout, stderr io.Writer

	email, role, sites, label, id *string
	passwordStdin                 *bool
}

func (u *usersRun) usage(format string, args ...any) int {
	fmt.Fprintf(u.stderr, "%s: %s\n", u.name, fmt.Sprintf(format, args...))
	return 2
}

func (u *usersRun) fail(err error) int {
	fmt.Fprintf(u.stderr, "%s: %v\n", u.name, err)
	return 1
}

func (u *usersRun) need(flag string, v *string, example string) bool {
	if strings.TrimSpace(*v) == "" {
		u.usage("--%s is required, such as --%s %s", flag, flag, example)
		return false
	}
	return true
}

// open opens the store the flags name and the accounts service on it.
func (u *usersRun) open(ctx context.Context) (*accounts.Service, func(), int) {
	cfg, err := u.loader.Load()
	if err != nil {
		return nil, nil, u.usage("%v", err)
	}
	st, err := server.OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, u.fail(err)
	}
	return accounts.New(st, accounts.Config{}), func() { st.Close() }, 0
}

func (u *usersRun) operator() accounts.Principal { return accounts.Operator(u.name) }

func usersAdd(ctx context.Context, u *usersRun) int {
	if !u.need("email", u.email, "ann@example.com") || !u.need("role", u.role, "owner") {
		return 2
	}
	if _, err := accounts.NormalizeEmail(*u.email); err != nil {
		return u.usage("--email: %v", err)
	}
	role, err := accounts.ParseRole(*u.role)
	if err != nil {
		return u.usage("--role: %v", err)
	}
	sites := strings.Split(*u.sites, ",")
	password, err := u.readPassword()
	if err != nil {
		return u.usage("%v", err)
	}
	svc, closeStore, code := u.open(ctx)
	if svc == nil {
		return code
	}
	defer closeStore()
	a, err := svc.AddAccount(ctx, u.operator(), accounts.NewAccount{Email: *u.email, Name: *u.label, Role: role, Sites: sites, Password: password})
	switch {
	case errors.Is(err, accounts.ErrEmailTaken):
		return u.fail(fmt.Errorf("%w; formd users list shows it", err))
	case errors.Is(err, accounts.ErrInvalidSites):
		return u.usage("--sites: %v, such as --sites shop,blog", err)
	case err != nil:
		return u.fail(err)
	}
	fmt.Fprintf(u.stdout, "added %s: %s of %s\n", a.Email, a.Role, strings.Join(a.Sites, ","))
	return 0
}

// readPassword reads the new password and checks it is one
// (accounts.CheckPassword).
func (u *usersRun) readPassword() (string, error) {
	pw, err := u.typedPassword()
	if err != nil {
		return "", err
	}
	return pw, accounts.CheckPassword(pw)
}

// typedPassword reads the new password: the first line of stdin with
// --password-stdin, else twice from the terminal without echo.
func (u *usersRun) typedPassword() (string, error) {
	if *u.passwordStdin {
		line, err := bufio.NewReader(terminal.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("--password-stdin: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return "", errors.New("--password-stdin: stdin is empty; pipe the password in, such as: printf '%s\\n' \"$PASSWORD\" | formd users add …")
		}
		return line, nil
	}
	if !terminal.isTerminal() {
		return "", errors.New("stdin is not a terminal, so the password cannot be asked for without echo; pipe it in and add --password-stdin")
	}
	fmt.Fprint(u.stderr, "Password: ")
	first, err := terminal.readPassword()
	fmt.Fprintln(u.stderr)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	fmt.Fprint(u.stderr, "Password again: ")
	second, err := terminal.readPassword()
	fmt.Fprintln(u.stderr)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if string(first) != string(second) {
		return "", errors.New("the two passwords differ; run the command again")
	}
	return string(first), nil
}

func usersList(ctx context.Context, u *usersRun) int {
	svc, closeStore, code := u.open(ctx)
	if svc == nil {
		return code
	}
	defer closeStore()
	op := u.operator()
	all, err := svc.Accounts(ctx, op)
	if err != nil {
		return u.fail(err)
	}
	tokens, err := svc.Tokens(ctx, op, "")
	if err != nil {
		return u.fail(err)
	}
	if len(all) == 0 {
		fmt.Fprintln(u.stdout, "no accounts yet; add one with formd users add --email E --role owner")
		return 0
	}
	tw := tabwriter.NewWriter(u.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EMAIL\tNAME\tROLE\tSITES\tSTATUS\tCREATED")
	for _, a := range all {
		status := "active"
		if a.Disabled {
			status = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Email, orDash(a.Name), a.Role, strings.Join(a.Sites, ","), status, day(a.CreatedAt))
	}
	tw.Flush()
	if len(tokens) == 0 {
		return 0
	}
	fmt.Fprintln(u.stdout)
	tw = tabwriter.NewWriter(u.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN ID\tACCOUNT\tNAME\tCREATED\tLAST USED\tREVOKED")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.AccountEmail, t.Name, day(t.CreatedAt), day(t.LastUsedAt), day(t.RevokedAt))
	}
	tw.Flush()
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func day(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// onAccount opens the store, finds the account --email names and calls
// fn with both, returning fn's exit code or the code of what failed first.
func (u *usersRun) onAccount(ctx context.Context, fn func(*accounts.Service, accounts.Account) int) int {
	svc, closeStore, code := u.open(ctx)
	if svc == nil {
		return code
	}
	defer closeStore()
	a, err := svc.AccountByEmail(ctx, u.operator(), *u.email)
	if errors.Is(err, accounts.ErrNotFound) {
		return u.fail(fmt.Errorf("--email: no account has the e-mail %s; formd users list shows them", strings.TrimSpace(*u.email)))
	}
	if errors.Is(err, accounts.ErrInvalidEmail) {
		return u.usage("--email: %v", err)
	}
	if err != nil {
		return u.fail(err)
	}
	return fn(svc, a)
}

// usersPasswd sets an account's password from the server's command line:
// the way back in for the last owner who forgot theirs. Every session of
// the account ends; its tokens keep working.
func usersPasswd(ctx context.Context, u *usersRun) int {
	if !u.need("email", u.email, "ann@example.com") {
		return 2
	}
	if _, err := accounts.NormalizeEmail(*u.email); err != nil {
		return u.usage("--email: %v", err)
	}
	password, err := u.readPassword()
	if err != nil {
		return u.usage("%v", err)
	}
	return u.onAccount(ctx, func(svc *accounts.Service, a accounts.Account) int {
		if err := svc.SetPassword(ctx, u.operator(), a.ID, password); err != nil {
			return u.fail(err)
		}
		fmt.Fprintf(u.stdout, "set the password of %s: its sessions are ended\n", a.Email)
		return 0
	})
}

func usersDisable(ctx context.Context, u *usersRun) int {
	if !u.need("email", u.email, "ann@example.com") {
		return 2
	}
	return u.onAccount(ctx, func(svc *accounts.Service, a accounts.Account) int {
		if _, err := svc.SetDisabled(ctx, u.operator(), a.ID, true); err != nil {
			return u.fail(err)
		}
		fmt.Fprintf(u.stdout, "disabled %s: its sessions are ended and its tokens refused\n", a.Email)
		return 0
	})
}

func usersToken(ctx context.Context, u *usersRun) int {
	if !u.need("email", u.email, "ann@example.com") || !u.need("name", u.label, "zapier") {
		return 2
	}
	return u.onAccount(ctx, func(svc *accounts.Service, a accounts.Account) int {
		token, t, err := svc.CreateToken(ctx, u.operator(), a.ID, *u.label)
		if err != nil {
			return u.fail(err)
		}
		fmt.Fprintln(u.stdout, token)
		fmt.Fprintf(u.stderr, "formd: token %s for %s (%s of %s); it is shown once, keep it now. Revoke it with formd users revoke-token --id %s\n",
			t.ID, a.Email, a.Role, strings.Join(a.Sites, ","), t.ID)
		return 0
	})
}

func usersRevokeToken(ctx context.Context, u *usersRun) int {
	if !u.need("id", u.id, "tok_abc…") {
		return 2
	}
	svc, closeStore, code := u.open(ctx)
	if svc == nil {
		return code
	}
	defer closeStore()
	err := svc.RevokeToken(ctx, u.operator(), strings.TrimSpace(*u.id))
	switch {
	case errors.Is(err, accounts.ErrNotFound):
		return u.fail(fmt.Errorf("--id: no token has the id %s; formd users list shows them", *u.id))
	case err != nil:
		return u.fail(err)
	}
	fmt.Fprintf(u.stdout, "revoked %s\n", *u.id)
	return 0
}
