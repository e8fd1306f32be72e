package bustest

import (
	"net/http"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock()
	if !c.Now().Equal(Epoch) {
		t.Fatalf("starts at %v", c.Now())
	}
	c.Advance(1500 * time.Millisecond)
	if got := c.Now().Sub(Epoch); got != 1500*time.Millisecond {
		t.Fatalf("advanced %v", got)
	}
}

func TestStart(t *testing.T) {
	seen := 0
	url := Start(t, &Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen++; h.ServeHTTP(w, r) })
	}})
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || seen != 1 {
		t.Fatalf("status %d, wrapper saw %d requests", resp.StatusCode, seen)
	}
}
