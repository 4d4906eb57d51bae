package main

// followGroups makes the IPC host serve the groups that run now: a group
// approved live (chats.go) or added to the config and reloaded (reload.go)
// gets its data/ipc/<folder> served at once, so `botd mcp` and every
// other IPC client reaches it without a restart; a group removed stops
// being served (what waits in its folder is answered forbidden: ipc's
// RemoveGroup). A folder the host refuses (a symlink, another group's
// directory) disables the group, as at start. The one place the host
// follows the set: call it after each change of d.groups.
func (d *daemon) followGroups() {
	if d.host == nil {
		return
	}
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	want := map[string]bool{}
	for _, g := range d.groups.All() {
		if _, off := d.groups.Disabled(g.Folder); !off {
			want[g.Folder] = true
		}
	}
	for _, f := range d.host.Groups() {
		if !want[f] {
			d.host.RemoveGroup(f)
		}
		delete(want, f)
	}
	for f := range want {
		if err := d.host.AddGroup(f); err != nil {
			d.disable(f, err)
		}
	}
}
