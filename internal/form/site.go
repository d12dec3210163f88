package form

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Site is the settings of a site that apply to every form of it: so far,
// who hears of their entries (webhooks, and e-mail to the owner), beside
// what each form names itself. It is declared in the same files as forms,
// as a document with site and notify and no id:
//
//	site: community-center
//	notify:
//	  webhooks: [{url: https://crm.example.org/hooks/formd, secret: whsec_…}]
type Site struct {
	Def    SiteDefinition
	source []byte
}

// SiteDefinition is a site's settings as the owner writes them.
type SiteDefinition struct {
	Site   string  `yaml:"site" json:"site"`
	Notify *Notify `yaml:"notify" json:"-"`
}

// ID is the site's id.
func (s *Site) ID() string { return s.Def.Site }

// Source is the definition as YAML.
func (s *Site) Source() []byte { return s.source }

// siteRecordPrefix marks a site's record among the forms the store keeps
// (form ids cannot start with it).
const siteRecordPrefix = "@"

// SiteRecordID is the store id of a site's settings.
func SiteRecordID(site string) string { return siteRecordPrefix + site }

// isSiteDoc says a YAML mapping is a site's settings: a site, no id, no
// fields.
func isSiteDoc(n *yaml.Node) bool {
	return mapValue(n, "site") != nil && mapValue(n, "id") == nil && mapValue(n, "fields") == nil
}

// compileSite checks a site's settings.
func compileSite(d SiteDefinition, src []byte, checkURL func(string) error) (*Site, []Problem) {
	c := &compiler{form: ""}
	if !idPattern.MatchString(d.Site) {
		c.add("", fmt.Sprintf("site %q is not valid: use 1-64 lower-case letters, digits, '-' or '_'", d.Site))
	}
	if d.Notify == nil {
		c.add("", "a site's settings need notify (the webhooks or e-mail of every form of the site); a form needs an id and fields")
	} else if e := d.Notify.Email; e != nil && e.Confirm != "" {
		c.add("", "notify.email.confirm names a form's field: set it on each form, not on the site")
	}
	c.checkNotify(d.Notify, nil, checkURL)
	for i := range c.probs {
		c.probs[i].Msg = "site " + d.Site + ": " + strings.TrimPrefix(c.probs[i].Msg, "")
	}
	if len(c.probs) > 0 {
		return nil, c.probs
	}
	return &Site{Def: d, source: src}, nil
}
