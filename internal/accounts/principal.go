package accounts

import (
	"fmt"
	"slices"
	"strings"
)

// Role is what an account may do on its sites.
type Role string

// The roles, from most to least power.
const (
	// Owner may do everything on its sites, including managing accounts
	// and erasing a person's data.
	Owner Role = "owner"
	// Editor reads, acts on entries and edits forms.
	Editor Role = "editor"
	// Viewer only reads.
	Viewer Role = "viewer"
)

// ParseRole reads a role name as typed by a person (any case, trimmed).
func ParseRole(s string) (Role, error) {
	switch r := Role(strings.ToLower(strings.TrimSpace(s))); r {
	case Owner, Editor, Viewer:
		return r, nil
	}
	return "", fmt.Errorf("%w: %q; use owner, editor or viewer", ErrInvalidRole, s)
}

// Action is a kind of thing a principal asks to do on a site.
type Action int

// The actions a role is checked against.
const (
	// Read is seeing forms, submissions, proof, the audit log and exports.
	Read Action = iota + 1
	// Act is cancelling an entry, marking spam or not spam, retrying dead
	// letters, redelivering webhooks, opening or closing a form, replay.
	Act
	// EditForms is changing form definitions.
	EditForms
	// Forget is erasing a person's data.
	Forget
	// ManageAccounts is adding and changing accounts and their API tokens.
	ManageAccounts
	// ReadSecrets is reading a definition's webhook signing secrets, with
	// which one could sign events to the owner's systems. Editors may
	// replace a secret but never read it back.
	ReadSecrets
	// CheckIn is letting people in at the door: checking in a ticket of
	// a form with checkin: true and reading the form's roster of valid
	// tickets (undoing a check-in is Act).
	CheckIn
)

func (a Action) String() string {
	switch a {
	case Read:
		return "read"
	case Act:
		return "act"
	case EditForms:
		return "edit-forms"
	case Forget:
		return "forget"
	case ManageAccounts:
		return "manage-accounts"
	case ReadSecrets:
		return "read-secrets"
	case CheckIn:
		return "check-in"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// allows is the one table of what each role may do.
var allows = map[Role][]Action{
	Owner:  {Read, Act, EditForms, Forget, ManageAccounts, ReadSecrets, CheckIn},
	Editor: {Read, Act, EditForms, CheckIn},
	Viewer: {Read},
}

// ScopeDoor is the scope of a door token (CreateDoorToken): it may only
// check people in (CheckIn), for volunteers at the door who must not read
// or change anything else.
const ScopeDoor = "door"

// AllSites in an account's site list means every site, present and future.
const AllSites = "*"

// How a principal proved who it is.
const (
	ViaSession = "session"
	ViaToken   = "token"
	// ViaCLI is the operator at the server's command line (formd users),
	// who holds the data directory and so every right.
	ViaCLI = "cli"
)

// Principal is who is asking: an account signed in with a session or an
// API token, the legacy admin token, or the operator at the command line.
// Every permission check is a method of Principal.
type Principal struct {
	AccountID string // empty for the legacy admin token and the command line
	Email     string
	Name      string
	Role      Role
	// Sites are the sites the principal may act on; AllSites for every one.
	Sites []string
	// Via is ViaSession, ViaToken or ViaCLI.
	Via string
	// TokenID is the API token used, for Via == ViaToken (AdminTokenID
	// for the admin token once it has an account; empty before).
	TokenID string
	// TokenBy is who made the token, when not the account itself.
	TokenBy string
	// Scope is the token's (Token.Scope): ScopeDoor narrows the role to
	// CheckIn.
	Scope string
	// CSRFToken is the session's token that state-changing forms carry as
	// _csrf (or the X-CSRF-Token header); empty unless Via == ViaSession.
	// It is not a credential alone, but never log it.
	CSRFToken string
	// session is the hash of the session's cookie, for Via == ViaSession:
	// the session a password change keeps.
	session []byte
}

// Can says whether the principal may do action on site. A site-less thing
// (site "") is reached only by a principal of every site.
func (p Principal) Can(action Action, site string) bool {
	return p.roleAllows(action) && p.covers(site)
}

// roleAllows says whether the principal's role allows action somewhere.
func (p Principal) roleAllows(action Action) bool {
	if p.Scope == ScopeDoor && action != CheckIn {
		return false
	}
	return slices.Contains(allows[p.Role], action)
}

// covers says whether site is in the principal's scope.
func (p Principal) covers(site string) bool {
	if slices.Contains(p.Sites, AllSites) {
		return true
	}
	return site != "" && slices.Contains(p.Sites, site)
}

// CanManage says whether the principal may create or change an account
// (or its tokens) whose scope is sites: it must manage accounts on each of
// them, and only a principal of every site may grant every site. An
// account with no sites at all is managed only by a principal of every
// site.
func (p Principal) CanManage(sites []string) bool {
	if !p.roleAllows(ManageAccounts) {
		return false
	}
	if len(sites) == 0 {
		return p.covers("")
	}
	for _, s := range sites {
		if s == AllSites {
			if !slices.Contains(p.Sites, AllSites) {
				return false
			}
			continue
		}
		if !p.covers(s) {
			return false
		}
	}
	return true
}

// EverySite says whether the principal's scope is every site.
func (p Principal) EverySite() bool { return slices.Contains(p.Sites, AllSites) }

// String describes the principal for the audit log and logs: who, never a
// secret.
func (p Principal) String() string {
	switch {
	case p.Via == ViaCLI:
		return "command line (" + p.Name + ")"
	case p.AccountID == "":
		return p.Name
	case p.Via == ViaToken && p.TokenBy != "":
		return p.Email + " (token " + p.TokenID + " made by " + p.TokenBy + ")"
	case p.Via == ViaToken:
		return p.Email + " (token " + p.TokenID + ")"
	default:
		return p.Email
	}
}

// Operator is the principal of someone at the server's command line, such
// as formd users: whoever can open the store has every right anyway.
func Operator(command string) Principal {
	return Principal{Name: command, Role: Owner, Sites: []string{AllSites}, Via: ViaCLI}
}

// legacyAdmin is the principal of the admin token made at first start and
// by formd token.
func legacyAdmin() Principal {
	return Principal{Name: "admin token", Role: Owner, Sites: []string{AllSites}, Via: ViaToken}
}
