package paths

import (
	"errors"
	"path/filepath"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestHome(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
		err  error
	}{
		{map[string]string{"HOME": "/h", "USERPROFILE": `C:\u`}, "/h", nil},
		{map[string]string{"HOME": "", "USERPROFILE": `C:\u`}, `C:\u`, nil},
		{map[string]string{}, "", ErrNoHome},
	}
	for _, tt := range tests {
		got, err := Home(env(tt.env))
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("Home(%v) = %q, %v; want %q, %v", tt.env, got, err, tt.want, tt.err)
		}
	}
}

func TestStateRoot(t *testing.T) {
	tests := []struct {
		env      map[string]string
		explicit string
		want     string
		err      error
	}{
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s", "/s", nil},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "", filepath.Join("/x", "interlink"), nil},
		{map[string]string{"XDG_STATE_HOME": "", "HOME": "/h"}, "", filepath.Join("/h", ".local", "state", "interlink"), nil},
		{map[string]string{"USERPROFILE": "/u"}, "", filepath.Join("/u", ".local", "state", "interlink"), nil},
		{map[string]string{}, "", "", ErrNoHome},
		{map[string]string{}, "/s", "/s", nil},
	}
	for _, tt := range tests {
		got, err := StateRoot(env(tt.env), tt.explicit)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("StateRoot(%v, %q) = %q, %v; want %q, %v", tt.env, tt.explicit, got, err, tt.want, tt.err)
		}
	}
}

// The rules as each system's usual environment meets them.
func TestStateRootPerSystem(t *testing.T) {
	tests := []struct {
		system string
		env    map[string]string
		want   string
	}{
		{"linux, XDG set", map[string]string{"HOME": "/home/me", "XDG_STATE_HOME": "/home/me/.xdg-state"}, filepath.Join("/home/me/.xdg-state", "interlink")},
		{"linux, no XDG", map[string]string{"HOME": "/home/me"}, filepath.Join("/home/me", ".local", "state", "interlink")},
		{"darwin", map[string]string{"HOME": "/Users/me"}, filepath.Join("/Users/me", ".local", "state", "interlink")},
		{"windows, USERPROFILE only", map[string]string{"USERPROFILE": `C:\Users\me`}, filepath.Join(`C:\Users\me`, ".local", "state", "interlink")},
		{"windows under Git Bash, HOME wins", map[string]string{"HOME": "/c/Users/me", "USERPROFILE": `C:\Users\me`}, filepath.Join("/c/Users/me", ".local", "state", "interlink")},
	}
	for _, tt := range tests {
		got, err := StateRoot(env(tt.env), "")
		if err != nil || got != tt.want {
			t.Errorf("%s: StateRoot = %q, %v; want %q", tt.system, got, err, tt.want)
		}
	}
}

func TestConfigFile(t *testing.T) {
	got, err := ConfigFile(env(map[string]string{"HOME": "/h"}), "id.key")
	if want := filepath.Join("/h", ".config", "interlink", "id.key"); got != want || err != nil {
		t.Errorf("ConfigFile = %q, %v; want %q", got, err, want)
	}
	if _, err := ConfigFile(env(nil), "peers.json"); !errors.Is(err, ErrNoHome) {
		t.Errorf("ConfigFile without home: err = %v", err)
	}
}
