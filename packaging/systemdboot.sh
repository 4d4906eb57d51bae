#!/usr/bin/env bash
# Boots the .deb under a real systemd: run by packaging's
# TestDebUnderSystemd (BOTD_SYSTEMD_TEST=1), as root:
#
#   systemdboot.sh DEB DIR
#
# Makes a Debian with systemd in DIR/root (mmdebstrap, from MIRROR or
# deb.debian.org), installs DEB, enables botd.service and a oneshot that,
# once botd is up, asks for the login page and records the unit's state and
# the confinement of its process, then powers off. systemd-nspawn boots it
# with a private network (only its own loopback). The record: DIR/result.
set -euo pipefail
deb=$1 dir=$2
root=$dir/root
mirror=${MIRROR:-http://deb.debian.org/debian}
say() { printf 'systemdboot: %s\n' "$*" >&2; }

say "mmdebstrap bookworm with systemd from $mirror"
mmdebstrap --quiet --variant=minbase --include=systemd,systemd-sysv,adduser,curl \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$root" "$mirror" </dev/null

cp "$deb" "$root/tmp/botd.deb"
unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && chroot "$1" dpkg -i /tmp/botd.deb' sh "$root" >&2
chroot "$root" systemctl enable botd.service >&2
install -m 0600 /dev/null "$root/etc/botd/env"
cat >"$root/etc/systemd/system/botd-check.service" <<'UNIT'
[Unit]
Description=check botd under systemd
After=botd.service
Requires=botd.service
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'exec >/root/result 2>&1; \
  echo "login: $(curl --retry 60 --retry-connrefused --retry-delay 1 -s -o /dev/null -w "%%{http_code}" http://127.0.0.1:8080/login)"; \
  systemctl show botd -p ActiveState -p SubState -p NRestarts -p User; \
  grep -E "^(Uid|NoNewPrivs|Seccomp|CapBnd|CapEff):" /proc/$(systemctl show botd -p MainPID --value)/status; \
  journalctl -u botd --no-pager | tail -20'
ExecStartPost=/bin/systemctl poweroff --no-block
[Install]
WantedBy=multi-user.target
UNIT
chroot "$root" systemctl enable botd-check.service >&2
say "booting (systemd-nspawn -b --private-network)"
timeout 300 systemd-nspawn --quiet --register=no --keep-unit --private-network -b -D "$root" >"$dir/boot.log" 2>&1 ||
	{ tail -30 "$dir/boot.log" >&2; say "systemd-nspawn failed"; exit 1; }
cp "$root/root/result" "$dir/result"
