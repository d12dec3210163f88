package intake_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const examForm = `
id: exam-conditions
fields:
  - {name: name, type: text, required: true}
  - {name: age_group, type: select, required: true, options: [adult, minor]}
  - name: guardian_phone
    type: phone
    region: CN
    required: true
    show_if: {field: age_group, equals: minor}
`

// A field not shown is not required; a value sent for it is not stored
// and every answer for the key lists it under ignored.
func TestConditionsOverHTTP(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, examForm, servertest.Options{})
	post := func(key, body string) (int, []byte) {
		resp, b := send(t, servertest.Client(), h.URL, jsonReq("exam-conditions", key, body))
		return resp.StatusCode, b
	}
	code, b := post("minor", `{"name":"Li","age_group":"minor"}`)
	var p problem.Problem
	if json.Unmarshal(b, &p); code != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "guardian_phone" || p.Errors[0].Code != "required" {
		t.Fatalf("a minor without the guardian's phone: %d %s, want 422 naming guardian_phone", code, b)
	}
	if code, b := post("minor", `{"name":"Li","age_group":"minor","guardian_phone":"13800138000"}`); code != 201 || strings.Contains(string(b), "ignored") {
		t.Fatalf("a minor with it: %d %s", code, b)
	}
	adult := `{"name":"Wang","age_group":"adult","guardian_phone":"13800138001"}`
	code, first := post("adult", adult)
	if code != 201 || !strings.HasSuffix(string(first), `,"ignored":["guardian_phone"]}`) {
		t.Fatalf("an adult sending the guardian's phone: %d %s, want 201 listing it as ignored", code, first)
	}
	if code, again := post("adult", adult); code != 200 || !bytes.Equal(again, first) {
		t.Fatalf("retry: %d %s, want the first body %s", code, again, first)
	}
	resp, exp := send(t, servertest.Client(), h.URL, req{method: "GET", path: "/v1/admin/forms/exam-conditions/export?format=jsonl",
		headers: map[string]string{"Authorization": "Bearer " + h.Token}})
	if resp.StatusCode != 200 || strings.Contains(string(exp), "13800138001") || !strings.Contains(string(exp), "+8613800138000") {
		t.Fatalf("export %d: the ignored value must not be stored, the shown one must:\n%s", resp.StatusCode, exp)
	}
}
