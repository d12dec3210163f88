package slack

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// TestTextIsEscaped: a form's title or a value cannot mention @channel or
// make a link in Slack's mrkdwn.
func TestTextIsEscaped(t *testing.T) {
	t.Parallel()
	_, body, err := request(form.ChatBot{URL: "https://hooks.slack.com/services/T/B/X"},
		chat.Message{Title: "<!channel> fair", Lines: []string{"Name: <https://evil.example|click> & co"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b Body
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	if want := "*&lt;!channel&gt; fair*\nName: &lt;https://evil.example|click&gt; &amp; co"; b.Text != want {
		t.Fatalf("text %q, want %q", b.Text, want)
	}
}
