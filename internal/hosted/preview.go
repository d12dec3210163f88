package hosted

import (
	"errors"
	"net/http"

	"github.com/formd/formd/internal/form"
)

// Preview answers the console builder's preview of f, a definition not
// yet published: the page a participant will see, in the language of
// ?lang=, without the SDK (nothing it does reaches the form's real
// submissions). Its form posts back to action, and a post is checked
// against f as intake checks it and shown with the messages a participant
// would get, each next to its field; nothing is kept.
func (h *Handler) Preview(w http.ResponseWriter, r *http.Request, f *form.Form, action string) {
	l := pickLang(r)
	v := h.view(r, f, l)
	v.ShowForm, v.Notice, v.Places = true, "", ""
	v.SDK, v.Challenge, v.Multipart = "", nil, false
	v.Preview = l.T["preview"]
	v.Action = action
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err == nil {
			values := map[string]any{}
			for k, vs := range r.PostForm {
				values[k] = listOrOne(vs)
			}
			delete(values, "_key")
			delete(values, "_ts")
			var errs []form.FieldError
			if _, err := f.Validate(values, form.NewHasher([]byte("preview"))); err != nil {
				var ve *form.ValidationError
				if errors.As(err, &ve) {
					errs = ve.Errors
				}
			}
			v.fill(l, values, errs)
			if len(errs) > 0 {
				v.Summary = l.T["invalid"]
			} else {
				v.Summary = l.T["preview-ok"]
			}
		}
	}
	h.render(w, f, http.StatusOK, "page", v)
}

func listOrOne(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	out := make([]any, len(vs))
	for i, s := range vs {
		out[i] = s
	}
	return out
}
