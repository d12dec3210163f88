package form

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// HiddenSecret stands for each webhook signing secret in a definition
// shown to someone who may not read secrets (editors and viewers): sent
// back unchanged, in a webhook whose url is unchanged, it keeps the
// stored secret (RestoreSecrets).
const HiddenSecret = "(hidden)"

// MaskSecrets is a definition's YAML with every webhook secret (the
// values of secret and secrets) replaced by HiddenSecret. A definition
// without secrets comes back as it was, byte for byte; one with secrets
// is re-encoded, comments kept.
//
// A webhook url's query (where receivers such as chat bots put their
// token) and user info are hidden the same way: MaskURL.
func MaskSecrets(src []byte) []byte {
	if !bytes.Contains(src, []byte("secret")) && !bytes.Contains(src, []byte("?")) && !bytes.Contains(src, []byte("@")) &&
		!bytes.Contains(src, []byte("/services/")) && !bytes.Contains(src, []byte("/hook/")) {
		return src
	}
	docs, err := yamlDocs(src)
	if err != nil {
		// Stored definitions were checked when applied; one that does not
		// parse now shows nothing rather than a secret.
		return []byte("# the definition could not be read to hide its secrets\n")
	}
	for _, d := range docs {
		walkSecrets(d, func(_ *yaml.Node, _ int, v *yaml.Node) { v.Value, v.Style, v.Tag = HiddenSecret, 0, "!!str" })
		walkWebhookURLs(d, func(key string, v *yaml.Node) {
			mask := MaskURL
			if key != "webhooks" {
				mask = MaskChatURL
			}
			if m := mask(v.Value); m != v.Value {
				v.Value, v.Style, v.Tag = m, 0, "!!str"
			}
		})
	}
	return encodeDocs(docs)
}

// MaskURL is a webhook url with its query and user info, where there are
// any, replaced by HiddenSecret: https://hooks.example/x?(hidden).
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" && u.User == nil && !u.ForceQuery {
		return raw
	}
	user := u.User != nil
	hasQuery := u.RawQuery != "" || u.ForceQuery
	u.User, u.RawQuery, u.ForceQuery = nil, "", false
	out := u.String()
	if user {
		if scheme, rest, ok := strings.Cut(out, "://"); ok {
			out = scheme + "://" + HiddenSecret + "@" + rest
		}
	}
	if hasQuery {
		out += "?" + HiddenSecret
	}
	return out
}

// walkWebhookURLs calls fn for the url of every webhook and chat robot
// (a mapping under a webhooks, slack, wecom, dingtalk or feishu list),
// with the list's key.
func walkWebhookURLs(n *yaml.Node, fn func(key string, v *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkWebhookURLs(c, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if (k.Value == "webhooks" || slices.Contains(ChatKinds, k.Value)) && v.Kind == yaml.SequenceNode {
				for _, hook := range v.Content {
					if u := mapValue(hook, "url"); u != nil && u.Kind == yaml.ScalarNode {
						fn(k.Value, u)
					}
				}
				continue
			}
			walkWebhookURLs(v, fn)
		}
	}
}

// RestoreSecrets puts the stored secrets back where a definition sent by
// someone who could not read them still has HiddenSecret: known says the
// secret and secrets a webhook of that url has now. A hidden secret of a
// url with none to keep is an error that says so.
func RestoreSecrets(src []byte, known func(url string) (Webhook, bool)) ([]byte, error) {
	if !bytes.Contains(src, []byte(HiddenSecret)) {
		return src, nil
	}
	docs, err := yamlDocs(src)
	if err != nil {
		return src, nil // the parser names the problem
	}
	var problems []error
	for _, d := range docs {
		// A url whose query was hidden is the stored one it stands for
		// (known matches it by MaskURL); the secrets are found by it
		// below.
		var restored []func()
		walkWebhookURLs(d, func(_ string, v *yaml.Node) {
			if !strings.Contains(v.Value, HiddenSecret) {
				return
			}
			w, ok := known(v.Value)
			if !ok {
				problems = append(problems, fmt.Errorf("the webhook %q has a hidden part but no stored url to keep (the url changed, or it is new): write it whole", v.Value))
				return
			}
			restored = append(restored, func() { v.Value = w.URL })
		})
		walkSecrets(d, func(hook *yaml.Node, i int, v *yaml.Node) {
			if v.Value != HiddenSecret {
				return
			}
			url := ""
			if u := mapValue(hook, "url"); u != nil {
				url = u.Value
			}
			w, ok := known(url)
			var keep string
			switch {
			case !ok:
			case i < 0:
				keep = w.Secret
			case i < len(w.Secrets):
				keep = w.Secrets[i]
			}
			if keep == "" {
				problems = append(problems, fmt.Errorf("the webhook %q has a hidden secret but no stored secret to keep (the url changed, or it is new): write its secret (whsec_…)", url))
				return
			}
			v.Value = keep
		})
		for _, fn := range restored {
			fn()
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return encodeDocs(docs), nil
}

// walkSecrets calls fn for each secret value under every mapping of n:
// i is -1 for secret, the index for an entry of secrets.
func walkSecrets(n *yaml.Node, fn func(hook *yaml.Node, i int, v *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkSecrets(c, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Value == "secret" && v.Kind == yaml.ScalarNode:
				fn(n, -1, v)
			case k.Value == "secrets" && v.Kind == yaml.SequenceNode:
				for j, s := range v.Content {
					if s.Kind == yaml.ScalarNode {
						fn(n, j, s)
					}
				}
			default:
				walkSecrets(v, fn)
			}
		}
	}
}

func yamlDocs(src []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &doc)
	}
}

// encodeDocs writes the documents back; a JSON definition becomes YAML,
// which every reader of a definition takes too.
func encodeDocs(docs []*yaml.Node) []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range docs {
		_ = enc.Encode(d) // nodes just decoded encode
	}
	_ = enc.Close()
	return buf.Bytes()
}
