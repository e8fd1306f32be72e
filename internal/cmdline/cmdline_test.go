package cmdline

import (
	"bytes"
	"testing"
)

func TestFail(t *testing.T) {
	var buf bytes.Buffer
	if code := Fail(&buf, "prog", ExitUsage, "bad flag", "try --help", "or read the docs"); code != ExitUsage {
		t.Errorf("code = %d", code)
	}
	want := "prog: bad flag\nprog: hint: try --help\nprog: hint: or read the docs\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestSetting(t *testing.T) {
	env := map[string]string{"SET": "from-env", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name, flag, env, want, source string
	}{
		{"flag wins", "from-flag", "SET", "from-flag", "--x"},
		{"env next", "", "SET", "from-env", "SET"},
		{"empty env is unset", "", "EMPTY", "default", "--x"},
		{"missing env", "", "NONE", "default", "--x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, src := Setting(getenv, tc.flag, "--x", tc.env, "default")
			if v != tc.want || src != tc.source {
				t.Errorf("got %q from %s, want %q from %s", v, src, tc.want, tc.source)
			}
		})
	}
}
