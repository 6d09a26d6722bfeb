#!/bin/sh
# Write deploy/clickhouse.env and deploy/ingest.env from their .example files with random
# passwords and token. Existing files are left alone (delete one to regenerate it).
set -eu
cd "$(dirname "$0")"
random() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
fill() {
    example="$1.example"; target="$1"
    if [ -e "$target" ]; then echo "$target exists, kept"; return; fi
    umask 077
    while IFS= read -r line; do
        case "$line" in
            *PASSWORD=|*TOKEN=) printf '%s%s\n' "$line" "$(random)" ;;
            *) printf '%s\n' "$line" ;;
        esac
    done < "$example" > "$target"
    echo "wrote $target"
}
fill clickhouse.env
fill ingest.env
