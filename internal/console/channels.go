package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// The chat robots' editor (issue 36): a form's robots under notify
// (slack, wecom, dingtalk, feishu) listed, added, changed and removed
// without writing YAML. It edits the definition as the principal may
// read it (admin.DefinitionFor: secrets and robot tokens hidden from
// those who may not read secrets), changing only the robot it is asked
// to, and publishes it through the builder's one path (admin.Publish:
// the stored secrets put back, the same checks as forms check, the
// change summary and its confirmation, a new version, the audit log).

func (h *Handler) registerChannels(route func(pattern string, fn func(http.ResponseWriter, *http.Request, page) error)) {
	route("GET /admin/forms/{form}/channels", h.channelsPage)
	route("POST /admin/forms/{form}/channels", h.saveChannel)
}

// chatSigns says whether a platform's robots sign their messages with
// a secret (DingTalk's 加签, Feishu's signature); Slack's and WeCom's
// token is in the URL alone.
func chatSigns(kind string) bool { return kind == form.ChatDingTalk || kind == form.ChatFeishu }

// chatBot is one robot as the editor shows and takes it.
type chatBot struct {
	Kind string
	// At is the robot's place, "<kind>:<index>" ("" for a new one).
	At string
	// URL is the robot's URL as the principal may read it (its token
	// hidden from a non-owner).
	URL string
	// HasSecret says a secret is set (never shown here; the YAML view
	// shows it to owners).
	HasSecret bool
	// Secret is what was typed, kept only to show a refused form again.
	Secret string
	Fields []string
	// Problems are what the checks said of this robot.
	Problems []string
}

// Signs says whether the robot's platform takes a secret.
func (b chatBot) Signs() bool { return chatSigns(b.Kind) }

// Includes says whether the messages carry the field's value.
func (b chatBot) Includes(name string) bool { return slices.Contains(b.Fields, name) }

type channelsView struct {
	Form    *form.Form
	Bots    []chatBot
	New     chatBot
	Kinds   []string
	Fields  []string
	CanEdit bool
	// HasDraft: the builder has a draft, which publishing here would
	// throw away; the page asks for it to be published or discarded.
	HasDraft bool
	// Confirm asks to confirm the change summary (as the builder does);
	// Pending is the change it confirms.
	Confirm *confirmView
	Pending *chatBot
	Op      string
	// Problems are what the checks said of no robot in particular.
	Problems []string
	L        lang
}

func (h *Handler) channelsPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	v, err := h.channelsView(r, p, f)
	if err != nil {
		return err
	}
	h.renderChannels(w, http.StatusOK, p, v)
	return nil
}

func (h *Handler) channelsView(r *http.Request, p page, f *form.Form) (channelsView, error) {
	bots, err := readChatBots(admin.DefinitionFor(p.P, f))
	if err != nil {
		return channelsView{}, err
	}
	v := channelsView{Form: f, Bots: bots, New: chatBot{Kind: form.ChatSlack}, Kinds: form.ChatKinds,
		CanEdit: p.P.Can(accounts.EditForms, f.Def.Site)}
	for _, fd := range f.Def.Fields {
		v.Fields = append(v.Fields, fd.Name)
	}
	if v.CanEdit {
		if _, _, hasDraft, _, err := h.buildSource(r, p); err == nil {
			v.HasDraft = hasDraft
		}
	}
	return v, nil
}

// botForm is one robot's form on the page: the robot and what its
// controls need.
type botForm struct {
	Bot    chatBot
	L      lang
	ID     string
	N      int
	Kinds  []string
	Fields []string
}

// Rows are the robots' forms, in the order of the definition.
func (v channelsView) Rows() []botForm {
	var out []botForm
	for i, b := range v.Bots {
		out = append(out, botForm{Bot: b, L: v.L, ID: fmt.Sprintf("bot%d", i), N: i + 1, Kinds: v.Kinds, Fields: v.Fields})
	}
	return out
}

// NewRow is the form that adds a robot.
func (v channelsView) NewRow() botForm {
	return botForm{Bot: v.New, L: v.L, ID: "new", Kinds: v.Kinds, Fields: v.Fields}
}

func (h *Handler) renderChannels(w http.ResponseWriter, status int, p page, v channelsView) {
	v.L = p.L
	p.Nav = "forms"
	p.Title = fmt.Sprintf(text(p.L, "chan.title"), title(v.Form, p.L))
	p.Data = v
	h.render(w, status, "channels", p)
}

// saveChannel adds, changes or removes one robot and publishes the form.
func (h *Handler) saveChannel(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	v, err := h.channelsView(r, p, f)
	if err != nil {
		return err
	}
	if v.HasDraft {
		p.Error = p.L.T["chan.draft"]
		h.renderChannels(w, http.StatusConflict, p, v)
		return nil
	}
	op := r.PostFormValue("op")
	in := chatBot{Kind: r.PostFormValue("kind"), At: r.PostFormValue("at"), URL: strings.TrimSpace(r.PostFormValue("url")),
		Secret: strings.TrimSpace(r.PostFormValue("secret")), Fields: r.PostForm["fields"]}
	if !slices.Contains(form.ChatKinds, in.Kind) && op != "remove" {
		return problem.New(problem.CodeInvalidRequest, "kind must be one of "+strings.Join(form.ChatKinds, ", "))
	}
	var root yaml.Node
	if err := yaml.Unmarshal(admin.DefinitionFor(p.P, f), &root); err != nil {
		return fmt.Errorf("read the definition of %s: %w", f.ID(), err)
	}
	at, err := editChatBot(&root, op, in)
	if err != nil {
		return problem.New(problem.CodeInvalidRequest, err.Error())
	}
	out, err := yaml.Marshal(&root)
	if err != nil {
		return fmt.Errorf("write the definition of %s: %w", f.ID(), err)
	}
	// The same checks forms check makes, each problem on its robot.
	if restored, err := h.adm.RestoreSecrets(p.P, out); err != nil {
		v.Problems = []string{problem.From(err).Detail}
	} else if _, err := form.ParseSet(restored, "", h.adm.CheckURL); err != nil {
		var de *form.DefinitionError
		if !errors.As(err, &de) {
			return err
		}
		v.Problems = nil
		for _, pr := range de.Problems {
			msg := chatProblem(p.L, pr.Msg)
			if at != "" && strings.HasPrefix(pr.Msg, "notify."+strings.Replace(at, ":", "[", 1)+"]") {
				in.Problems = append(in.Problems, msg)
			} else {
				v.Problems = append(v.Problems, msg)
			}
		}
	}
	if len(v.Problems) > 0 || len(in.Problems) > 0 {
		v.showAgain(op, in)
		p.Error = p.L.T["chan.invalid"]
		h.renderChannels(w, http.StatusUnprocessableEntity, p, v)
		return nil
	}
	pj, err := h.adm.Publish(r.Context(), p.P, f.ID(), out, r.PostFormValue("confirm"))
	if problem.From(err).Code == problem.CodeConfirmationRequired {
		_, set, perr := h.adm.CheckDefinitions(p.P, out)
		if perr != nil {
			return perr
		}
		plan, perr := h.adm.PlanAgainst(r.Context(), set)
		if perr != nil {
			return perr
		}
		v.Confirm, v.Pending, v.Op = confirmOf(plan, pj.Confirm, p.L), &in, op
		h.renderChannels(w, http.StatusConflict, p, v)
		return nil
	}
	if err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(f.ID())+"/channels", "chan-"+op)
}

// showAgain puts what was typed back on the page, on the robot it was
// typed for (a new one on the form that adds).
func (v *channelsView) showAgain(op string, in chatBot) {
	if op == "add" {
		in.At = ""
		v.New = in
		return
	}
	for i := range v.Bots {
		if v.Bots[i].At == in.At {
			v.Bots[i] = in
		}
	}
}

// editChatBot changes the definition's tree: adds the robot in (op
// add), changes the one at in.At (save; to another platform it moves),
// or removes it (remove). It returns where the robot now is.
func editChatBot(root *yaml.Node, op string, in chatBot) (string, error) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return "", errors.New("the definition is not one form")
	}
	notify := mapValue(doc, "notify")
	if notify == nil {
		notify = &yaml.Node{Kind: yaml.MappingNode}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "notify"}, notify)
	}
	var old *yaml.Node
	if op != "add" {
		kind, n, ok := strings.Cut(in.At, ":")
		i, err := strconv.Atoi(n)
		seq := mapValue(notify, kind)
		if !ok || err != nil || seq == nil || seq.Kind != yaml.SequenceNode || i < 0 || i >= len(seq.Content) {
			return "", fmt.Errorf("no robot %q in this form (changed meanwhile? reload the page)", in.At)
		}
		old = seq.Content[i]
		seq.Content = slices.Delete(seq.Content, i, i+1)
		if len(seq.Content) == 0 {
			mapDelete(notify, kind)
		}
		if op == "remove" {
			return "", nil
		}
		if op != "save" {
			return "", fmt.Errorf("op must be add, save or remove, not %q", op)
		}
	}
	bot := &yaml.Node{Kind: yaml.MappingNode}
	if old != nil && old.Kind == yaml.MappingNode {
		bot = old
	}
	mapSet(bot, "url", &yaml.Node{Kind: yaml.ScalarNode, Value: in.URL, Tag: "!!str"})
	switch {
	case in.Secret != "":
		// Typed for a platform that does not sign, the check says so
		// rather than the page dropping it unsaid.
		mapSet(bot, "secret", &yaml.Node{Kind: yaml.ScalarNode, Value: in.Secret, Tag: "!!str"})
	case !chatSigns(in.Kind):
		mapDelete(bot, "secret")
	}
	// A blank secret keeps the one there was (hidden from a non-owner, it
	// is put back from the stored definition).
	mapDelete(bot, "fields")
	if len(in.Fields) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, name := range in.Fields {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name, Tag: "!!str"})
		}
		mapSet(bot, "fields", seq)
	}
	seq := mapValue(notify, in.Kind)
	if seq == nil {
		seq = &yaml.Node{Kind: yaml.SequenceNode}
		mapSet(notify, in.Kind, seq)
	}
	bot.Style = 0
	seq.Content = append(seq.Content, bot)
	return fmt.Sprintf("%s:%d", in.Kind, len(seq.Content)-1), nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func mapSet(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}

func mapDelete(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// readChatBots lists the robots of a definition as it is shown.
func readChatBots(src []byte) ([]chatBot, error) {
	var def struct {
		Notify *form.Notify `yaml:"notify"`
	}
	if err := yaml.Unmarshal(src, &def); err != nil {
		return nil, fmt.Errorf("read the robots: %w", err)
	}
	var out []chatBot
	for _, kind := range form.ChatKinds {
		for i, b := range def.Notify.Bots(kind) {
			out = append(out, chatBot{Kind: kind, At: fmt.Sprintf("%s:%d", kind, i), URL: b.URL, HasSecret: b.Secret != "", Fields: b.Fields})
		}
	}
	return out, nil
}

var (
	wrongPlatformRe = regexp.MustCompile(`^(notify\.\S+\.url) is a (.+) robot's URL \((\S+)\), not a (.+) one: list it under (notify\.\S+)$`)
	notRobotRe      = regexp.MustCompile(`^(notify\.\S+\.url) is not a (.+) robot's URL: copy it from the group's robot settings, such as (\S+)$`)
	noSecretRe      = regexp.MustCompile(`^(notify\.\S+\.secret): a (.+) robot has no secret \(its token is in the URL\); remove it$`)
	dingSecretRe    = regexp.MustCompile(`^(notify\.\S+\.secret) is not a DingTalk signing secret`)
	badURLRe        = regexp.MustCompile(`^(notify\.\S+\.url): (.+)$`)
)

// chatProblem words a check's problem of a robot for the page's
// language; the setting's name stays as the YAML writes it.
func chatProblem(l lang, msg string) string {
	if l.Tag != chinese.Tag {
		return msg
	}
	if m := wrongPlatformRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s 是 %s 机器人的地址（%s），不是 %s 的：请放在 %s 下", m[1], m[2], m[3], m[4], m[5])
	}
	if m := notRobotRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s 不是 %s 机器人的地址：请从群机器人设置中复制，如 %s", m[1], m[2], m[3])
	}
	if m := noSecretRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s：%s 机器人没有密钥（令牌在地址中），请删去", m[1], m[2])
	}
	if m := dingSecretRe.FindStringSubmatch(msg); m != nil {
		return m[1] + " 不是钉钉的加签密钥：请复制机器人“加签”设置中以 SEC 开头的那个"
	}
	if m := badURLRe.FindStringSubmatch(msg); m != nil {
		return m[1] + " 不可用（" + m[2] + "）"
	}
	return definitionProblem(l, msg)
}
