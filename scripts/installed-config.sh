#!/usr/bin/env bash
# The config an installed botd starts with (the .deb's /etc/botd/config.yaml
# and the image's): config.example.yaml with its data under /var/lib/botd
# and the settings a package or a container sets from the environment:
#
#   BOTD_WEB_LISTEN, BOTD_WEB_ALLOW_REMOTE   where the web room listens
#   BOTD_WEB_ADMIN_TOKEN                      the same admin on two instances
#   BOTD_DATABASE_DRIVER, BOTD_DATABASE_DSN,  sqlite (default) or postgres
#     BOTD_INSTANCE_ID
#   BOTD_SEARCH_PROVIDER, BOTD_SEARCH_URL     web_search (searxng | brave)
#   BOTD_OPS_LISTEN                           /healthz, /readyz, /metrics
#
# Usage: installed-config.sh config.example.yaml >config.yaml
# Each rewrite must match exactly one line: a reshaped example fails here
# rather than shipping a config with a relative data path.
set -euo pipefail
src=${1:?usage: installed-config.sh config.example.yaml}
rules=(
	'1|^# botd configuration\..*|# botd configuration, as installed: the package'"'"'s /etc/botd/config.yaml (secrets in /etc/botd/env) or the image'"'"'s.'
	'|^(data_dir: +)\./data +|\1/var/lib/botd/data   |'
	'|^(groups_dir: +)\./groups +|\1/var/lib/botd/groups |'
	'|^# database: +(#.*)|database:                       \1|'
	'|^#   driver: sqlite +(#.*)|  driver: ${BOTD_DATABASE_DRIVER:-sqlite}  \1|'
	'|^#   dsn: "" +(#.*)|  dsn: "${BOTD_DATABASE_DSN}"  \1|'
	'|^#   instance_id: "" +(#.*)|  instance_id: "${BOTD_INSTANCE_ID}"  \1|'
	'|^    # allow_remote: true +(# required to listen on anything but loopback.*)|    allow_remote: ${BOTD_WEB_ALLOW_REMOTE:-false}  \1|'
	'|^    # admin_token: \$\{BOTD_WEB_ADMIN_TOKEN\} +(#.*)|    admin_token: "${BOTD_WEB_ADMIN_TOKEN}"  \1|'
	'|^    # provider: searxng .*|    provider: "${BOTD_SEARCH_PROVIDER}"  # searxng (your own, with json in its search.formats) or brave|'
	'|^    # base_url: http://127.0.0.1:8888$|    base_url: "${BOTD_SEARCH_URL}"     # searxng: its address; brave: empty|'
	'|^    # provider: brave .*|    # brave needs its key:|'
	'|^    # api_key: "\$\{BRAVE_API_KEY\}"$|    api_key: "${BRAVE_API_KEY}"|'
	'|^(  listen: )127\.0\.0\.1:9464( +#.*)|\1"${BOTD_OPS_LISTEN:-127.0.0.1:9464}"\2|'
)
text=$(cat "$src")
for r in "${rules[@]}"; do
	IFS='|' read -r addr pat repl <<<"$r"
	n=$(grep -cE "$pat" <<<"$text" || true)
	if [[ $n != 1 ]]; then
		echo "installed-config: $src: $n lines match '$pat', want 1 (config.example.yaml changed shape?)" >&2
		exit 1
	fi
	text=$(sed -E "${addr}s|$pat|$repl|" <<<"$text")
done
printf '%s\n' "$text"
