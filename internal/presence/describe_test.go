package presence

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

func TestDescribe(t *testing.T) {
	root := t.TempDir()
	if gitRoot(root) != "" {
		t.Skipf("an ancestor of %s holds .git", root)
	}
	mkdir := func(parts ...string) string {
		p := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mkdir("proj", ".git")
	deep := mkdir("proj", "cmd", "tool")
	wt := mkdir("worktree", "sub")
	if err := os.WriteFile(filepath.Join(root, "worktree", ".git"), []byte("gitdir: elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := mkdir("plain", "dir")

	tests := []struct {
		name, cwd, want string
	}{
		{"git dir in cwd", filepath.Join(root, "proj"), "proj"},
		{"git dir in an ancestor", deep, "proj"},
		{"git file in an ancestor", wt, "worktree"},
		{"git file in cwd", filepath.Join(root, "worktree"), "worktree"},
		{"none", plain, ""},
		{"missing cwd", filepath.Join(root, "gone"), ""},
		{"empty cwd", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Describe("s1", tt.cwd)
			want := identity.SessionInfo{SessionID: "s1", Cwd: tt.cwd, GitRoot: tt.want}
			if got != want {
				t.Errorf("Describe(%q) = %+v, want %+v", tt.cwd, got, want)
			}
		})
	}
}
