package bus

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

func TestHealthzNamesTheVersionInAHeaderOnly(t *testing.T) {
	for _, version := range []string{"", "v0.1.0"} {
		s := New(store.NewMemory(nil), &Options{Version: version})
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"ok"}` {
			t.Errorf("version %q: %d %s", version, rec.Code, rec.Body)
		}
		if got := rec.Header().Get(wire.VersionHeader); got != version {
			t.Errorf("version %q: header %q", version, got)
		}
	}
}
