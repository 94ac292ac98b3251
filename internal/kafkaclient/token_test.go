package kafkaclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
)

// The OAUTHBEARER token comes from the file (re-read each time, trimmed)
// or from the command's output; an empty token or a failing command is an
// error that names the key.
func TestTokenFromFileOrCommand(t *testing.T) {
	ctx := context.Background()
	f := filepath.Join(t.TempDir(), "token")
	for _, content := range []string{"first\n", "  second  "} {
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		tok, err := Token(ctx, config.SASL{TokenFile: f})
		if err != nil || tok != strings.TrimSpace(content) {
			t.Errorf("token file holding %q: %q, %v", content, tok, err)
		}
	}
	if tok, err := Token(ctx, config.SASL{TokenCommand: "echo from-a-command"}); err != nil || tok != "from-a-command" {
		t.Errorf("token command: %q, %v", tok, err)
	}
	if _, err := Token(ctx, config.SASL{TokenCommand: "echo oops >&2; exit 3"}); err == nil || !strings.Contains(err.Error(), "kafka.sasl.token_command") || !strings.Contains(err.Error(), "oops") {
		t.Errorf("failing command: %v", err)
	}
	if _, err := Token(ctx, config.SASL{TokenCommand: "true"}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token: %v", err)
	}
	if _, err := Token(ctx, config.SASL{TokenFile: "/no/such/token"}); err == nil || !strings.Contains(err.Error(), "kafka.sasl.token_file") {
		t.Errorf("missing file: %v", err)
	}
}
