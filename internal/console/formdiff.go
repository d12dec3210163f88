package console

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
)

// The editor's confirm step: before a definition that changes the form's
// fields, capacity, unique sets, notify, site, waitlist or spam rules is
// saved, the editor shows what changes (the plan formd forms apply prints,
// admin.PlanApply) and what of it reaches entries already collected, and
// saves only when the owner presses save again on that same text.

// confirmView is what the confirm step shows.
type confirmView struct {
	Lines []string // the changes, in the page's language
	Risks []string // the changes that reach collected data
	// Token ties the confirmation to the text shown: an edit after it
	// shows the new changes first.
	Token string
}

// confirmToken names a definition's text.
func confirmToken(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:16])
}

// confirmChange renders the confirm step and says so (true) unless the
// text was confirmed already or changes nothing the step lists.
func (h *Handler) confirmChange(w http.ResponseWriter, r *http.Request, p page, f *form.Form, restored []byte, src string) (bool, error) {
	token := confirmToken(src)
	if r.PostFormValue("confirm") == token {
		return false, nil
	}
	set, err := form.ParseSet(restored, "", nil)
	if err != nil {
		return false, nil // ApplyForms says what is wrong
	}
	plan, err := h.adm.PlanAgainst(r.Context(), set)
	if err != nil {
		return false, err
	}
	v := confirmView{Token: token}
	for _, c := range plan.Changes {
		if !c.Empty() {
			v.Lines = append(v.Lines, changeLines(c, p.L)...)
		}
	}
	if len(v.Lines) == 0 {
		return false, nil
	}
	for _, rk := range plan.Risks {
		v.Risks = append(v.Risks, riskLine(rk, p.L))
	}
	p.Nav, p.Title = "forms", title(f, p.L)
	p.Data = map[string]any{"Form": f, "Source": src, "Confirm": v}
	h.render(w, http.StatusOK, "edit", p)
	return true, nil
}

// confirmOf is a plan's change summary to confirm, in the page's
// language (the builder's Publish and the chat robots' editor).
func confirmOf(plan admin.Plan, token string, l lang) *confirmView {
	cv := &confirmView{Token: token}
	for _, c := range plan.Changes {
		if !c.Empty() {
			cv.Lines = append(cv.Lines, changeLines(c, l)...)
		}
	}
	for _, rk := range plan.Risks {
		cv.Risks = append(cv.Risks, riskLine(rk, l))
	}
	return cv
}

// changeLines is a change in the page's language.
func changeLines(c form.Change, l lang) []string {
	tr := func(key string, args ...any) string { return fmt.Sprintf(text(l, key), args...) }
	if c.New {
		return []string{tr("diff.new")}
	}
	var out []string
	if len(c.Added) > 0 {
		out = append(out, tr("diff.added", strings.Join(c.Added, ", ")))
	}
	if len(c.Removed) > 0 {
		out = append(out, tr("diff.removed", strings.Join(c.Removed, ", ")))
	}
	for _, rt := range c.Retyped {
		out = append(out, tr("diff.retyped", rt))
	}
	for _, s := range c.Settings {
		out = append(out, tr("diff.setting", settingName(s.Setting, l), valueName(s.Old, l), valueName(s.New, l)))
	}
	return out
}

func riskLine(rk admin.Risk, l lang) string {
	if rk.Field != "" {
		return fmt.Sprintf(text(l, "diff.risk-field"), rk.Field)
	}
	return fmt.Sprintf(text(l, "diff.risk-setting"), settingName(rk.Setting, l), valueName(rk.Old, l), valueName(rk.New, l), rk.Entries)
}

func settingName(s string, l lang) string {
	if t, ok := l.T["diff.s."+s]; ok {
		return t
	}
	return s
}

// valueName translates the words form.Compare writes for no value.
func valueName(v string, l lang) string {
	if t, ok := l.T["diff.v."+v]; ok {
		return t
	}
	return v
}

// text is a string of the page's language, English when it lacks one.
func text(l lang, key string) string {
	if s, ok := l.T[key]; ok {
		return s
	}
	return enStrings[key]
}

func init() {
	for k, v := range map[string]string{
		"diff.title":             "Check the changes before they are saved",
		"diff.intro":             "Saving this definition changes:",
		"diff.risky":             "These changes reach entries already collected:",
		"diff.how":               "Nothing is saved yet. Press the button to save these changes, or edit the text to see its changes first.",
		"diff.save":              "Save these changes",
		"diff.new":               "A new form.",
		"diff.added":             "Fields added: %s",
		"diff.removed":           "Fields removed: %s",
		"diff.retyped":           "Field type changed: %s",
		"diff.setting":           "%s: %s → %s",
		"diff.risk-field":        "The field %s is removed, and entries hold values of it (exports keep them, as a removed column).",
		"diff.risk-setting":      "%s changes from %s to %s on a form with %d entries.",
		"diff.s.site":            "Site",
		"diff.s.capacity":        "Places",
		"diff.s.when_full":       "When full",
		"diff.s.unique":          "One entry per",
		"diff.s.notify":          "Notifications",
		"diff.s.spam":            "Spam rules",
		"diff.v.none":            "none",
		"diff.v.no limit":        "no limit",
		"diff.v.waitlist":        "waitlist",
		"diff.v.reject":          "turn people away",
		"diff.v.none (no limit)": "nothing (no limit)",
	} {
		enStrings[k] = v
	}
	for k, v := range map[string]string{
		"diff.title":             "保存前请核对改动",
		"diff.intro":             "保存此定义将改动：",
		"diff.risky":             "以下改动涉及已收集的报名：",
		"diff.how":               "尚未保存。点击按钮保存这些改动；若修改文本，会先显示新的改动。",
		"diff.save":              "保存这些改动",
		"diff.new":               "新表单。",
		"diff.added":             "新增字段：%s",
		"diff.removed":           "删除字段：%s",
		"diff.retyped":           "字段类型改变：%s",
		"diff.setting":           "%s：%s → %s",
		"diff.risk-field":        "字段 %s 被删除，而已有报名填写了它（导出仍保留这些值，列为已删除字段）。",
		"diff.risk-setting":      "%s 从 %s 改为 %s，而此表单已有 %d 条报名。",
		"diff.s.site":            "站点",
		"diff.s.capacity":        "名额",
		"diff.s.when_full":       "满额时",
		"diff.s.unique":          "每人限报一次，依据",
		"diff.s.notify":          "通知",
		"diff.s.spam":            "防垃圾规则",
		"diff.v.none":            "无",
		"diff.v.no limit":        "不限",
		"diff.v.waitlist":        "候补",
		"diff.v.reject":          "不再接受",
		"diff.v.none (no limit)": "无（不限名额）",
	} {
		zhStrings[k] = v
	}
}
