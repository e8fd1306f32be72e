package bus

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
)

func TestHealthzNamesTheVersionInAHeaderOnly(t *testing.T) {
	for _, version := range []string{"", "v0.1.0"} {
		s := New(store.NewMemory(nil), &Options{Version: version})
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"ok"}` {
			t.Errorf("version %q: %d %s", version, rec.Code, rec.Body)
		}
		if got := rec.Header().Get(VersionHeader); got != version {
			t.Errorf("version %q: header %q", version, got)
		}
	}
}
