package budget

import "strings"

// Only a prompt the operator typed restarts the budgets. A host runs the
// same prompt hook for every turn, whoever started it: Claude Code's
// UserPromptSubmit hook runs for the turn that the Stop-hook listener's
// output starts, and Codex's for the turn that a text handed to codex queue
// starts. Neither host tells the hook who wrote the prompt, so the rule is
// decided from the prompt's text:
//
//   - Every text interlink hands a host to start a turn (an inbox notice, a
//     pause notice, a pairing notice, the listener's renewal, a saved
//     failure handed over again) passes one of three exits: the Stop-hook
//     listener's output, a channel notification, a codex queue run. Each
//     exit puts [WakeLine] in front with [MarkWake], so every such prompt
//     holds [WakeMark].
//   - Claude Code wraps every turn it starts by itself (a Stop hook's
//     wake-up, a background task that ended) in a <task-notification>
//     element, which the hook sees in the prompt.
//
// A prompt with either sign is not the operator's. A forged sign can only
// withhold a restart, never grant one, so the signs need no secret: a
// peer's text never becomes a prompt (notices carry none of it), and an
// operator who pastes a notice merely does not restart the budgets with
// that prompt.

// WakeMark is the sign, in a prompt, of a turn that interlink started.
const WakeMark = "[interlink wake-up]"

// WakeLine is the first line of every text interlink hands a host to start
// a turn. It also tells the model whose turn it is.
const WakeLine = WakeMark + " Interlink started this turn; your operator did not write this prompt."

// hostWakeSigns are what hosts put in a prompt of a turn they started by
// themselves: Claude Code's wrapper of a Stop hook's wake-up and of a
// background task's end.
var hostWakeSigns = []string{"<task-notification>"}

// MarkWake returns text with [WakeLine] in front, on a line of its own,
// unless text starts with it already.
func MarkWake(text string) string {
	if strings.HasPrefix(text, WakeLine) {
		return text
	}
	return WakeLine + "\n" + text
}

// Typed reports whether prompt, the prompt of a turn as a host's prompt
// hook sees it, may have been typed by the operator: it is not blank and
// holds neither [WakeMark] nor a sign of a turn the host started by itself.
// Only such a prompt restarts the budgets.
func Typed(prompt string) bool {
	if strings.TrimSpace(prompt) == "" || strings.Contains(prompt, WakeMark) {
		return false
	}
	for _, sign := range hostWakeSigns {
		if strings.Contains(prompt, sign) {
			return false
		}
	}
	return true
}
