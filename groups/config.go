package groups

import (
	"strconv"
	"strings"

	"github.com/botd-dev/botd/internal/settings"
)

// Config is one entry of the groups list in botd's config file.
type Config struct {
	Folder  string `yaml:"folder"`
	Name    string `yaml:"name"`
	Chat    string `yaml:"chat"`
	Trigger string `yaml:"trigger"`
	// RequiresTrigger is a pointer so that an absent key means "true".
	RequiresTrigger *bool `yaml:"requires_trigger"`
	Main            bool  `yaml:"main"`
}

// NeedsTrigger reports whether messages must start with the trigger to
// start a run; the main group and requires_trigger:false groups answer all.
func (c Config) NeedsTrigger() bool {
	if c.Main {
		return false
	}
	return c.RequiresTrigger == nil || *c.RequiresTrigger
}

// Group is the group the entry configures.
func (c Config) Group() Group {
	return Group{Folder: c.Folder, Name: c.Name, Chat: c.Chat, Trigger: c.Trigger,
		RequiresTrigger: c.NeedsTrigger(), Main: c.Main}
}

// ValidateList reports every problem of the groups list with its key
// path; each chat id is checked by its network's rule (RegisterNetwork).
// folders learns each valid folder and its index, for the sections that
// name a group.
func ValidateList(list []Config, folders map[string]int) error {
	var ps settings.Problems
	chats := map[string]int{}
	mains := 0
	for i, g := range list {
		path := "groups[" + strconv.Itoa(i) + "]"
		if err := ValidateFolder(g.Folder); err != nil {
			ps.Add(path+".folder", "%v", err)
		} else if j, dup := folders[g.Folder]; dup {
			ps.Add(path+".folder", "%q is already used by groups[%d]", g.Folder, j)
		} else {
			folders[g.Folder] = i
		}
		if err := ValidateChatID(g.Chat); err != nil {
			ps.Add(path+".chat", "%v", err)
		} else if j, dup := chats[g.Chat]; dup {
			ps.Add(path+".chat", "%q is already registered by groups[%d]", g.Chat, j)
		} else {
			chats[g.Chat] = i
		}
		if g.Trigger != "" && strings.TrimSpace(g.Trigger) != g.Trigger {
			ps.Add(path+".trigger", "must not start or end with spaces")
		}
		if g.Main {
			mains++
			if mains > 1 {
				ps.Add(path+".main", "only one group may be the main group")
			}
		}
	}
	return ps.Err()
}
