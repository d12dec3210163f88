package sso

import (
	"fmt"
	"slices"
	"strings"

	"github.com/formd/formd/internal/accounts"
)

// Rule maps one value of the role claim to a role over some sites: the
// text form is VALUE=ROLE:SITE[,SITE…], such as formd-editors=editor:fair
// or formd-admins=owner:* (every site).
type Rule struct {
	Value string
	Role  accounts.Role
	Sites []string
}

func (r Rule) String() string {
	return r.Value + "=" + string(r.Role) + ":" + strings.Join(r.Sites, ",")
}

// ParseRules reads the rules of --oidc-roles: rules separated by ";" (or
// new lines, in the config file), each VALUE=ROLE:SITES.
func ParseRules(text string) ([]Rule, error) {
	var out []Rule
	for _, part := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		value, grant, ok := strings.Cut(part, "=")
		role, sites, ok2 := strings.Cut(grant, ":")
		value = strings.TrimSpace(value)
		if !ok || !ok2 || value == "" {
			return nil, fmt.Errorf("rule %q is not VALUE=ROLE:SITES, such as formd-editors=editor:fair or formd-admins=owner:*", part)
		}
		r, err := accounts.ParseRole(role)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", part, err)
		}
		var list []string
		for _, s := range strings.Split(sites, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("rule %q names no site: list site ids after the role (editor:fair,expo) or * for every site", part)
		}
		if slices.Contains(list, accounts.AllSites) {
			list = []string{accounts.AllSites}
		}
		out = append(out, Rule{Value: value, Role: r, Sites: list})
	}
	return out, nil
}

// Grant is the role and sites the first rule whose value the claim holds
// gives; ok is false when no rule matches (the person gets nothing).
// The claim may be a string or a list of strings, as providers send
// groups and roles.
func Grant(rules []Rule, claim any) (role accounts.Role, sites []string, ok bool) {
	values := claimValues(claim)
	for _, r := range rules {
		if slices.Contains(values, r.Value) {
			return r.Role, slices.Clone(r.Sites), true
		}
	}
	return "", nil, false
}

func claimValues(claim any) []string {
	switch v := claim.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return v
	}
	return nil
}
