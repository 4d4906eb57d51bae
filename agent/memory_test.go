package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
)

// "@Andy remember that Anna is vegetarian": the note lands in the group's
// MEMORY.md and every later run's prompt; forget takes it out again. A
// group writes only its own memory; only the main group writes the global
// one, which every group reads.
func TestAssistantWritesItsMemory(t *testing.T) {
	var toolResults []string
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			for _, p := range last.Parts {
				for _, c := range p.ToolResult.Content {
					toolResults = append(toolResults, c.Text)
				}
			}
			return textResult("done"), nil
		}
		text := userText(*req)
		switch {
		case strings.Contains(text, "remember that Anna is vegetarian"):
			return toolCall("c1", "remember", `{"note":"Anna is vegetarian"}`), nil
		case strings.Contains(text, "forget about Anna"):
			return toolCall("c2", "forget", `{"text":"Anna is vegetarian"}`), nil
		case strings.Contains(text, "remember for everyone"):
			return toolCall("c3", "remember", `{"note":"The family dentist is Dr. Weiss","scope":"global"}`), nil
		}
		return textResult("ok"), nil
	})
	h := newHarness(t, f, nil)
	h.start()
	memFile := filepath.Join(h.groupsDir, "family", "MEMORY.md")
	system := func() string { r := f.requests(); return r[len(r)-1].System }

	h.say(famChat, "Carol", "@Andy remember that Anna is vegetarian")
	h.idle()
	if b, _ := os.ReadFile(memFile); !strings.Contains(string(b), "Anna is vegetarian") {
		t.Fatalf("MEMORY.md lacks the note:\n%s", b)
	}
	h.say(famChat, "Carol", "@Andy what should we cook?")
	h.idle()
	if !strings.Contains(system(), "Anna is vegetarian") {
		t.Errorf("the next run's prompt lacks the note:\n%s", system())
	}

	h.say(famChat, "Carol", "@Andy forget about Anna")
	h.idle()
	h.say(famChat, "Carol", "@Andy anything else?")
	h.idle()
	if b, _ := os.ReadFile(memFile); strings.Contains(string(b), "Anna") {
		t.Errorf("MEMORY.md still holds the note:\n%s", b)
	}
	if strings.Contains(system(), "Anna is vegetarian") {
		t.Errorf("the prompt still holds the forgotten note")
	}

	// Family is not the main group: no global note.
	h.say(famChat, "Carol", "@Andy remember for everyone: the dentist")
	h.idle()
	if !strings.Contains(strings.Join(toolResults, "\n"), "only the main group") {
		t.Errorf("a non-main group wrote the global memory: %q", toolResults)
	}
	if _, err := os.Stat(filepath.Join(h.groupsDir, "global", "MEMORY.md")); err == nil {
		t.Errorf("the global memory file was written by family")
	}
	// The main group may, and family reads it.
	h.say(mainChat, "Me", "remember for everyone: the dentist")
	h.idle()
	h.say(famChat, "Carol", "@Andy who is our dentist?")
	h.idle()
	if !strings.Contains(system(), "<global_memory>\n- ") || !strings.Contains(system(), "The family dentist is Dr. Weiss") {
		t.Errorf("family's prompt lacks the global note:\n%s", system())
	}
	if b, _ := os.ReadFile(filepath.Join(h.groupsDir, "work", "MEMORY.md")); strings.Contains(string(b), "dentist") || strings.Contains(string(b), "Anna") {
		t.Errorf("another group's memory was written:\n%s", b)
	}
}
