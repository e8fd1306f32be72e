package setup

import (
	"path/filepath"
	"testing"
)

func TestShellQuote(t *testing.T) {
	tests := []struct{ goos, in, want string }{
		{"linux", "/usr/bin/interlink-mcp", "/usr/bin/interlink-mcp"},
		{"linux", "/a b/c", "'/a b/c'"},
		{"darwin", "/it's", `'/it'\''s'`},
		{"linux", "", "''"},
		{"windows", `C:\Users\me\go\bin\interlink-mcp.exe`, `"C:\Users\me\go\bin\interlink-mcp.exe"`},
		{"windows", `C:/tools/interlink-mcp.exe`, `C:/tools/interlink-mcp.exe`},
		{"windows", `C:\Program Files\a"b`, `"C:\Program Files\a\"b"`},
	}
	for _, tt := range tests {
		if got := shellQuoteFor(tt.goos, tt.in); got != tt.want {
			t.Errorf("shellQuoteFor(%s, %q) = %q, want %q", tt.goos, tt.in, got, tt.want)
		}
	}
}

func TestCodexHomeIsCodexHomeElseDotCodexUnderHome(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CODEX_HOME": "/c", "HOME": "/h"}, "/c"},
		{map[string]string{"HOME": "/h"}, filepath.Join("/h", ".codex")},
		{map[string]string{}, ""},
	} {
		if got := CodexHome(env(tt.env)); got != tt.want {
			t.Errorf("CodexHome(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}
