package mailbox

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Shown splits receipts into those it was told of and the rest, keeps at
// most MaxShown, and forgets the one shown longest ago first.
func TestShownIsBoundedOldestFirst(t *testing.T) {
	s := NewShown()
	r := func(i int) Receipt { return Receipt{Sender: "k", MsgID: fmt.Sprint(i)} }
	for i := range MaxShown + 10 {
		s.Add(r(i))
		s.Add(r(i)) // a repeat adds nothing
	}
	shown, unshown := s.Split([]Receipt{r(0), r(9), r(10), r(MaxShown + 9), {Sender: "other", MsgID: "10"}})
	if want := []Receipt{r(10), r(MaxShown + 9)}; !cmp.Equal(shown, want) {
		t.Errorf("shown %v, want %v", shown, want)
	}
	if want := []Receipt{r(0), r(9), {Sender: "other", MsgID: "10"}}; !cmp.Equal(unshown, want) {
		t.Errorf("unshown %v, want %v", unshown, want)
	}
}
