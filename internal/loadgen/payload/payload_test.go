package payload

import "testing"

func TestPayloadRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 30, 256, 4096} {
		p := Make("s12-345", 987654321, size)
		if size > 30 && len(p) != size+2 {
			t.Errorf("size %d: payload is %d bytes, want %d", size, len(p), size+2)
		}
		id, sent, err := Parse(p)
		if err != nil || id != "s12-345" || sent != 987654321 {
			t.Errorf("size %d: Parse = %q, %d, %v", size, id, sent, err)
		}
	}
	for _, bad := range []string{``, `"`, `"abc"`, `"a.b.c"`, `{"a":1}`, `null`} {
		if _, _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) succeeded", bad)
		}
	}
}
