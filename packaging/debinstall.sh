#!/usr/bin/env bash
# Installs a botd .deb into a throwaway root and checks it; run by
# packaging's TestDebInstall under `unshare --mount`, as root:
#
#   debinstall.sh DEB SCRATCH
#
# The root is an overlay of / (upper layer in SCRATCH), so dpkg, adduser
# and systemd-analyze are the host's own and nothing reaches the host.
# Steps: dpkg -i; the files, user, conffile and permissions; the unit
# passes systemd-analyze verify; botd runs as botd (its stdout, with the
# web room's address, goes to ours); after a line on stdin it is stopped,
# the package reinstalled, removed (config and data kept) and purged
# (config gone, data and user kept). "debinstall: ok" at the end.
set -euo pipefail
deb=$1 scratch=$2
fail() { printf 'debinstall: FAIL: %s\n' "$*" >&2; exit 1; }
say() { printf 'debinstall: %s\n' "$*" >&2; }

root=$scratch/root
mkdir -p "$root" "$scratch/upper" "$scratch/work"
mount --make-rprivate /
# Exit 77: this machine cannot make the throwaway root (the test skips).
mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$root" ||
	{ say "cannot mount an overlay of /"; exit 77; }
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
# An empty /run: no systemd there, so the scripts leave systemctl alone.
mount -t tmpfs tmpfs "$root/run"
mount -t tmpfs tmpfs "$root/tmp"
cp "$deb" "$root/tmp/botd.deb"
inroot() { chroot "$root" "$@"; }

say "dpkg -i"
inroot dpkg -i /tmp/botd.deb >&2 || fail "dpkg -i"
inroot test -x /usr/bin/botd || fail "no /usr/bin/botd"
unit=
for d in /lib/systemd/system /usr/lib/systemd/system; do
	inroot test -f "$d/botd.service" && unit=$d/botd.service
done
[[ -n $unit ]] || fail "no botd.service"
inroot getent passwd botd >/dev/null || fail "no botd user"
IFS=: read -r _ _ uid _ _ home shell < <(inroot getent passwd botd)
((uid < 1000)) || fail "botd is not a system user (uid $uid)"
[[ $home == /var/lib/botd && $shell == /usr/sbin/nologin ]] || fail "botd user: home $home shell $shell"
[[ $(inroot stat -c '%U:%G %a' /etc/botd/config.yaml) == 'root:botd 640' ]] || fail "config.yaml: $(inroot stat -c '%U:%G %a' /etc/botd/config.yaml), want root:botd 640"
[[ $(inroot stat -c '%U:%G %a' /var/lib/botd) == 'botd:botd 750' ]] || fail "/var/lib/botd: $(inroot stat -c '%U:%G %a' /var/lib/botd)"
inroot dpkg-query -W -f='${Conffiles}\n' botd | grep -q ' /etc/botd/config.yaml ' || fail "config.yaml is not a conffile"
inroot dpkg-query -W -f='${Recommends}\n' botd | grep -q ffmpeg || fail "does not recommend ffmpeg"
inroot dpkg-query -W -f='${Recommends}\n' botd | grep -q poppler-utils || fail "does not recommend poppler-utils"
say "systemd-analyze verify $unit"
inroot systemd-analyze verify "$unit" >&2 || fail "systemd-analyze verify $unit"
inroot /usr/bin/botd version
inroot setpriv --reuid=botd --regid=botd --init-groups /usr/bin/botd config check --config /etc/botd/config.yaml >&2 ||
	fail "botd config check as botd"

say "botd run as botd"
# As the unit runs it, from its data directory; logs into the data.
chroot "$root" setpriv --reuid=botd --regid=botd --init-groups --inh-caps=-all \
	env -i PATH=/usr/bin:/bin HOME=/var/lib/botd BOTD_WEB_LISTEN=127.0.0.1:0 \
	sh -c 'cd /var/lib/botd && exec /usr/bin/botd run --config /etc/botd/config.yaml 2>/tmp/botd.log' &
pid=$!
read -r _ || true
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" || true
inroot test -f /var/lib/botd/data/botd.db || { cat "$root/tmp/botd.log" >&2; fail "botd wrote no database in /var/lib/botd/data"; }
[[ $(inroot stat -c %U /var/lib/botd/data/botd.db) == botd ]] || fail "botd.db not botd's"

say "reinstall (an upgrade keeps the config's owner)"
echo "# edited" >>"$root/etc/botd/config.yaml"
inroot dpkg -i /tmp/botd.deb >&2 || fail "dpkg -i again"
[[ $(inroot stat -c '%U:%G %a' /etc/botd/config.yaml) == 'root:botd 640' ]] || fail "config.yaml after reinstall: $(inroot stat -c '%U:%G %a' /etc/botd/config.yaml)"
grep -q '^# edited' "$root/etc/botd/config.yaml" || fail "reinstall replaced the edited config"

say "dpkg -r"
inroot dpkg -r botd >&2 || fail "dpkg -r"
inroot test ! -e /usr/bin/botd || fail "/usr/bin/botd left after remove"
inroot test ! -e "$unit" || fail "$unit left after remove"
grep -q '^# edited' "$root/etc/botd/config.yaml" || fail "remove lost the config"
inroot test -f /var/lib/botd/data/botd.db || fail "remove lost the data"

say "dpkg --purge"
inroot dpkg --purge botd >&2 || fail "dpkg --purge"
inroot test ! -e /etc/botd || fail "/etc/botd left after purge: $(ls -A "$root/etc/botd")"
inroot test -f /var/lib/botd/data/botd.db || fail "purge deleted the data"
inroot getent passwd botd >/dev/null || fail "purge deleted the user that owns the data"
inroot dpkg-statoverride --list /etc/botd/config.yaml >/dev/null && fail "statoverride left after purge"
[[ -z $(inroot dpkg-query -W -f='${Status}' botd 2>/dev/null | grep -v 'not-installed') ]] || fail "dpkg still knows botd: $(inroot dpkg-query -W -f='${Status}' botd)"
say ok
