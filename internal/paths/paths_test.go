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

func TestConfigFile(t *testing.T) {
	got, err := ConfigFile(env(map[string]string{"HOME": "/h"}), "id.key")
	if want := filepath.Join("/h", ".config", "interlink", "id.key"); got != want || err != nil {
		t.Errorf("ConfigFile = %q, %v; want %q", got, err, want)
	}
	if _, err := ConfigFile(env(nil), "peers.json"); !errors.Is(err, ErrNoHome) {
		t.Errorf("ConfigFile without home: err = %v", err)
	}
}
