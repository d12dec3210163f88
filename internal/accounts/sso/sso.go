// Package sso signs people in to the console through the organization's
// OpenID Connect provider: discovery at start, the authorization code flow
// with PKCE, a state and a nonce bound to the browser that started it, and
// the ID token verified by github.com/coreos/go-oidc. Who the person may be
// in formd comes from a claim mapping the owner writes (Rule); the account
// itself is accounts.Service's (SignInExternal).
package sso

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/problem"
	"golang.org/x/oauth2"
)

// Settings are the owner's OpenID Connect settings (--oidc-*).
type Settings struct {
	// Issuer is the provider's issuer URL; "" turns single sign-on off.
	Issuer       string
	ClientID     string
	ClientSecret string
	// Name is the provider's name on the sign-in button ("Sign in with
	// Name"); the issuer's host when empty.
	Name string
	// RoleClaim is the ID token claim the Rules read (such as groups).
	RoleClaim string
	Rules     []Rule
	// CreateAccounts lets a person whose verified e-mail has no account
	// yet get one on first sign-in, when a rule gives them a role.
	CreateAccounts bool
}

// Enabled says single sign-on is configured.
func (s Settings) Enabled() bool { return s.Issuer != "" }

// DisplayName is the provider's name for the button.
func (s Settings) DisplayName() string {
	if s.Name != "" {
		return s.Name
	}
	if u, err := url.Parse(s.Issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return "OpenID Connect"
}

// Errors of a sign-in; each names its problem code.
var (
	ErrFlow        = problem.Sentinel("the sign-in was not started in this browser, took too long, or its state does not match: start again from the sign-in page", problem.CodeSSOFailed)
	ErrRefused     = problem.Sentinel("the identity provider refused the sign-in", problem.CodeSSOFailed)
	ErrToken       = problem.Sentinel("the identity provider's ID token is not valid for this server", problem.CodeSSOFailed)
	ErrUnavailable = problem.Sentinel("the identity provider could not be reached", problem.CodeSSOUnavailable)
	ErrUnverified  = problem.Sentinel("the identity provider does not say your e-mail is verified", problem.CodeSSONoAccess)
)

// Options are what tests replace: the clock and the HTTP client used to
// reach the provider.
type Options struct {
	Now        func() time.Time
	HTTPClient *http.Client
}

// Provider is a discovered OpenID Provider, ready to sign people in.
type Provider struct {
	set      Settings
	prov     *oidc.Provider
	verifier *oidc.IDTokenVerifier
	now      func() time.Time
	client   *http.Client
}

// Discover reads the provider's discovery document. Its errors name the
// setting and what discovery said, for the start-up error.
func Discover(ctx context.Context, set Settings, opts Options) (*Provider, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	where := strings.TrimSuffix(set.Issuer, "/") + "/.well-known/openid-configuration"
	prov, err := oidc.NewProvider(oidc.ClientContext(ctx, opts.HTTPClient), set.Issuer)
	if err != nil {
		return nil, fmt.Errorf("setting oidc-issuer (--oidc-issuer, FORMD_OIDC_ISSUER): discovery at %s: %w", where, err)
	}
	var doc struct {
		ResponseTypes []string `json:"response_types_supported"`
		PKCE          []string `json:"code_challenge_methods_supported"`
	}
	if err := prov.Claims(&doc); err != nil {
		return nil, fmt.Errorf("setting oidc-issuer (--oidc-issuer, FORMD_OIDC_ISSUER): discovery at %s: %w", where, err)
	}
	if len(doc.ResponseTypes) > 0 && !slices.Contains(doc.ResponseTypes, "code") {
		return nil, fmt.Errorf("setting oidc-issuer (--oidc-issuer, FORMD_OIDC_ISSUER): discovery at %s lists response_types_supported %v, without the authorization code flow (code) formd uses", where, doc.ResponseTypes)
	}
	if len(doc.PKCE) > 0 && !slices.Contains(doc.PKCE, "S256") {
		return nil, fmt.Errorf("setting oidc-issuer (--oidc-issuer, FORMD_OIDC_ISSUER): discovery at %s lists code_challenge_methods_supported %v, without S256 (PKCE) that formd sends", where, doc.PKCE)
	}
	v := prov.Verifier(&oidc.Config{ClientID: set.ClientID, Now: opts.Now})
	return &Provider{set: set, prov: prov, verifier: v, now: opts.Now, client: opts.HTTPClient}, nil
}

// Name is the provider's name for the sign-in button.
func (p *Provider) Name() string { return p.set.DisplayName() }

// CallbackPath is where the provider sends the browser back: register
// PUBLIC-URL + CallbackPath as the client's redirect URI.
const CallbackPath = "/admin/sso/callback"

// flowCookie holds a started sign-in's state, nonce and PKCE verifier in
// the browser that started it: the callback must come back to the same
// browser with the same state. It is HttpOnly, on the callback's path, and
// lives flowTTL.
const flowCookie = "formd_sso"

const flowTTL = 10 * time.Minute

type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
	At       int64  `json:"t"`
}

func (p *Provider) oauth(base string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: p.set.ClientID, ClientSecret: p.set.ClientSecret,
		Endpoint:    p.prov.Endpoint(),
		RedirectURL: strings.TrimSuffix(base, "/") + CallbackPath,
		Scopes:      []string{oidc.ScopeOpenID, "email", "profile"},
	}
}

// Start sends the browser to the provider: base is the console's scheme
// and host (the redirect URI is base + CallbackPath), next the console
// page to land on after. secure marks the flow cookie Secure.
func (p *Provider) Start(w http.ResponseWriter, r *http.Request, base, next string, secure bool) {
	f := flow{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), Verifier: oauth2.GenerateVerifier(),
		Next: next, At: p.now().Unix()}
	raw, _ := json.Marshal(f)
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: base64.RawURLEncoding.EncodeToString(raw), Path: "/admin/sso/",
		MaxAge: int(flowTTL / time.Second), HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
	u := p.oauth(base).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	http.Redirect(w, r, u, http.StatusFound)
}

// Identity is who the provider says signed in, with what the owner's
// mapping gives them.
type Identity struct {
	Issuer, Subject string
	Email, Name     string
	// Role and Sites come from the first rule that matches; Mapped is
	// false when none does.
	Role   accounts.Role
	Sites  []string
	Mapped bool
	// Next is the console page the sign-in was started from.
	Next string
}

// Finish completes a sign-in at the callback: the flow cookie's state
// against the request's, the code exchanged with the PKCE verifier, the
// ID token verified (signature, issuer, audience, expiry) and its nonce
// checked. The flow cookie is dropped whatever the outcome.
func (p *Provider) Finish(w http.ResponseWriter, r *http.Request, base string, secure bool) (Identity, error) {
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: "", Path: "/admin/sso/", MaxAge: -1, HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
	f, err := readFlow(r)
	if err != nil || p.now().Sub(time.Unix(f.At, 0)) > flowTTL {
		return Identity{}, ErrFlow
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return Identity{}, fmt.Errorf("%w: %s %s", ErrRefused, e, q.Get("error_description"))
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		return Identity{}, ErrFlow
	}
	ctx := context.WithValue(r.Context(), oauth2.HTTPClient, p.client)
	tok, err := p.oauth(base).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return Identity{}, fmt.Errorf("%w: the code was refused: %s %s", ErrRefused, re.ErrorCode, re.ErrorDescription)
		}
		return Identity{}, fmt.Errorf("%w: exchange the code: %v", ErrUnavailable, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("%w: the token answer has no id_token", ErrToken)
	}
	idt, err := p.verifier.Verify(oidc.ClientContext(ctx, p.client), raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrToken, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return Identity{}, fmt.Errorf("%w: its nonce is not this sign-in's", ErrToken)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrToken, err)
	}
	id := Identity{Issuer: idt.Issuer, Subject: idt.Subject, Next: f.Next}
	id.Email, _ = claims["email"].(string)
	id.Name, _ = claims["name"].(string)
	if verified, _ := claims["email_verified"].(bool); !verified || id.Email == "" {
		return Identity{}, ErrUnverified
	}
	id.Role, id.Sites, id.Mapped = Grant(p.set.Rules, claims[p.set.RoleClaim])
	return id, nil
}

func readFlow(r *http.Request) (flow, error) {
	var f flow
	c, err := r.Cookie(flowCookie)
	if err != nil {
		return f, err
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return f, err
	}
	err = json.Unmarshal(raw, &f)
	if err == nil && (f.State == "" || f.Nonce == "" || f.Verifier == "") {
		err = errors.New("incomplete")
	}
	return f, err
}
